"""Random programs of rustgrad ops (views, in-place writes, broadcasting, dtypes, zero
sizes) checked step by step against a numpy model of PyTorch, and their gradients
against finite differences. See fuzz_programs.py; ``make fuzz`` runs the same programs
for a given time."""

from fuzz_programs import registry_layout_check, registry_names, run_program
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# Deterministic in CI: a fixed sequence of examples, nothing read from or written to
# the example database. The autouse grad-mode fixture is function-scoped but harmless
# across examples (every program leaves grad mode on).
CI = settings(
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=False,
    report_multiple_bugs=False,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.function_scoped_fixture,
    ],
)


@settings(CI, max_examples=300)
@given(st.data())
def test_random_programs_match_numpy(data):
    run_program(data.draw, grad_mode=False)


@settings(CI, max_examples=150)
@given(st.data())
def test_random_float64_programs_have_finite_difference_gradients(data):
    run_program(data.draw, grad_mode=True)


@settings(CI, max_examples=10)
@given(st.data())
def test_every_registry_op_gives_the_same_result_in_every_layout(data):
    """Every op of the binding's op registry (Note [Op registry]), with its sample call
    from scripts/gen_ops_doc.py, on random values in a contiguous, a transposed and a
    strided tensor: equal results or the same exception."""
    assert registry_layout_check(data.draw) > 100


def test_the_fuzzers_op_tables_name_registry_ops():
    """The numpy-modelled ops of the program fuzzer are registry ops (or, for the ones
    written in Python, functions of rustgrad / nn.functional), so a renamed or removed
    op fails here instead of silently leaving the fuzzer."""
    import rustgrad as torch
    from fuzz_programs import BINARY, FUNCTIONAL, PAIRWISE, UNARY

    names = registry_names()
    assert set(BINARY) | set(UNARY) <= names
    assert set(PAIRWISE) - names == {"isclose"} and callable(torch.isclose)
    assert set(FUNCTIONAL) <= set(torch.nn.functional.__all__)
