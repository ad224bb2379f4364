"""``isclose`` / ``allclose`` against numpy's ``isclose`` (the same asymmetric rule as
PyTorch's: ``|a - b| <= atol + rtol * |b|``), and PyTorch's errors."""

import numpy as np
import pytest
import rustgrad as torch

SPECIAL = [0.0, -0.0, 1.0, 1.0 + 1e-6, 1.0 + 1e-4, -1.0, 1e-9, np.inf, -np.inf, np.nan, 1e30]


@pytest.mark.parametrize("equal_nan", [False, True])
@pytest.mark.parametrize("rtol,atol", [(1e-5, 1e-8), (0.0, 0.0), (1e-3, 0.0), (0.0, 1e-3)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_isclose_matches_numpy(dtype: str, rtol: float, atol: float, equal_nan: bool) -> None:
    a = np.array([x for x in SPECIAL for _ in SPECIAL], dtype=dtype)
    b = np.array([y for _ in SPECIAL for y in SPECIAL], dtype=dtype)
    got = torch.isclose(torch.from_numpy(a), torch.from_numpy(b), rtol, atol, equal_nan)
    np.testing.assert_array_equal(got.numpy(), np.isclose(a, b, rtol, atol, equal_nan))
    assert torch.from_numpy(a).allclose(torch.from_numpy(a), equal_nan=True)
    assert torch.allclose(torch.from_numpy(a), torch.from_numpy(b), rtol, atol, equal_nan) == (
        np.allclose(a, b, rtol, atol, equal_nan)
    )


def test_isclose_of_integers_and_bools_and_broadcasting() -> None:
    a = torch.tensor([[1, 2, 100]])
    b = torch.tensor([[1], [3]])
    expected = np.isclose(a.numpy().astype(float), b.numpy().astype(float), rtol=0.5, atol=0)
    np.testing.assert_array_equal(torch.isclose(a, b, rtol=0.5, atol=0).numpy(), expected)
    bools = torch.isclose(torch.tensor([True, False]), torch.tensor([True, True]))
    assert bools.tolist() == [True, False]


def test_isclose_errors_are_pytorchs() -> None:
    with pytest.raises(RuntimeError, match="Float did not match Double"):
        torch.isclose(torch.ones(1), torch.ones(1, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero"):
        torch.isclose(torch.ones(1), torch.ones(1), rtol=-1.0)
    with pytest.raises(RuntimeError, match="atol must be greater than or equal to zero"):
        torch.isclose(torch.ones(1), torch.ones(1), atol=-1.0)
    with pytest.raises(TypeError, match="must be Tensor"):
        torch.isclose(torch.ones(1), 1.0)


def test_isclose_records_no_graph() -> None:
    x = torch.ones(2, requires_grad=True)
    result = torch.isclose(x, x * 1)
    assert result.grad_fn is None and not result.requires_grad
