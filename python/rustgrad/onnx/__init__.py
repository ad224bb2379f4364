"""ONNX interchange: ``rustgrad.onnx.export`` writes a model as a standard ONNX file,
as ``torch.onnx.export`` does (see Note [ONNX] in docs/architecture.md).

The ``onnx`` Python package is needed only when these functions are called.
"""

from __future__ import annotations

from ._export import TrainingMode, UnsupportedOperatorError, export
from ._import import load_model as load_model

__all__ = ["TrainingMode", "UnsupportedOperatorError", "export"]
