"""Shared pytest configuration for the rustgrad Python suite."""

import pytest
import rustgrad as torch


def pytest_configure(config):
    # Registered here because the suite runs with --strict-markers.
    config.addinivalue_line(
        "markers",
        "rustgrad_only: checks a feature PyTorch does not have (volatile, _live_nodes, "
        "RUSTGRAD_NUM_THREADS, the file:line of an in-place write, thread-count determinism)",
    )


@pytest.fixture(autouse=True)
def _grad_mode_is_restored():
    """Every test must leave grad mode on; restore it so one leak fails one test only."""
    yield
    enabled = torch.is_grad_enabled()
    torch.set_grad_enabled(True)
    assert enabled, "this test left grad mode off"


@pytest.fixture(autouse=True)
def _default_dtype_is_restored():
    """Every test must leave the default dtype float32 (it is process-global); restore it so
    one leak fails one test only."""
    yield
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)
    assert default == torch.float32, "this test left the default dtype changed"


@pytest.fixture(autouse=True)
def _default_generator_is_seeded():
    """The default generator starts from a seed drawn from the OS in each process, as
    PyTorch's (Note [Random numbers]): seed it before every test so that a test that draws
    random numbers without seeding is still deterministic, whatever ran before it (as
    PyTorch's own test suite seeds each test)."""
    torch.manual_seed(0)
    yield
