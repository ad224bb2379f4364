"""Autograd anomaly mode (PyTorch's ``torch.autograd.anomaly_mode``).

See Note [Anomaly detection] in docs/architecture.md.
"""

from __future__ import annotations

import warnings

from .. import _rustgrad

__all__ = ["detect_anomaly", "set_detect_anomaly"]


class detect_anomaly:  # noqa: N801 - PyTorch's name
    r"""Context manager that enables anomaly detection for the autograd engine.

    While it is active, every recorded op keeps the Python traceback of the forward
    call that created it; an error raised while backward runs a node first emits a
    ``UserWarning`` "Error detected in MulBackward0. Traceback of forward call that
    caused the error: ...". With ``check_nan`` (the default), a backward node that
    returns NaN values raises ``RuntimeError`` ("Function 'MulBackward0' returned
    nan values in its 0th output."). It warns when created, as PyTorch does, and
    like PyTorch's it is not a decorator.

    Args:
        check_nan: raise when a backward node returns NaN values.

    Example:
        >>> import rustgrad, warnings
        >>> x = rustgrad.tensor([0.0], requires_grad=True)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     with rustgrad.autograd.detect_anomaly():
        ...         y = (x / x).sum()  # 0 / 0
        ...         y.backward()  # doctest: +SKIP
        RuntimeError: Function 'DivBackward0' returned nan values in its 0th output.
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = _rustgrad.is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = _rustgrad.is_anomaly_check_nan_enabled()
        warnings.warn(
            "Anomaly Detection has been enabled. "
            "This mode will increase the runtime "
            "and should only be enabled for debugging.",
            stacklevel=2,
        )

    def __enter__(self) -> None:
        _rustgrad.set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args: object) -> None:
        _rustgrad.set_anomaly_enabled(self.prev, self.prev_check_nan)


class set_detect_anomaly:  # noqa: N801 - PyTorch's name
    r"""Sets anomaly detection on or off; usable as a function or a context manager.

    Called, it switches the mode at once; used in a ``with`` statement, the previous
    mode is restored on exit. See :class:`detect_anomaly`.

    Args:
        mode: whether to enable anomaly detection.
        check_nan: whether backward raises when a node returns NaN values.

    Example:
        >>> import rustgrad
        >>> with rustgrad.autograd.set_detect_anomaly(True, check_nan=False):
        ...     rustgrad.is_anomaly_enabled(), rustgrad.is_anomaly_check_nan_enabled()
        (True, False)
        >>> rustgrad.is_anomaly_enabled()
        False
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = _rustgrad.is_anomaly_enabled()
        self.prev_check_nan = _rustgrad.is_anomaly_check_nan_enabled()
        _rustgrad.set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args: object) -> None:
        _rustgrad.set_anomaly_enabled(self.prev, self.prev_check_nan)
