"""The layer modules of ``rustgrad.nn`` (PyTorch's ``torch/nn/modules``)."""

from __future__ import annotations

from .activation import *  # noqa: F403
from .activation import __all__ as _activation
from .batchnorm import *  # noqa: F403
from .batchnorm import __all__ as _batchnorm
from .container import *  # noqa: F403
from .container import __all__ as _container
from .conv import *  # noqa: F403
from .conv import __all__ as _conv
from .dropout import *  # noqa: F403
from .dropout import __all__ as _dropout
from .flatten import *  # noqa: F403
from .flatten import __all__ as _flatten
from .instancenorm import *  # noqa: F403
from .instancenorm import __all__ as _instancenorm
from .linear import *  # noqa: F403
from .linear import __all__ as _linear
from .loss import *  # noqa: F403
from .loss import __all__ as _loss
from .module import Module as Module
from .multihead import *  # noqa: F403
from .multihead import __all__ as _multihead
from .normalization import *  # noqa: F403
from .normalization import __all__ as _normalization
from .padding import *  # noqa: F403
from .padding import __all__ as _padding
from .pixelshuffle import *  # noqa: F403
from .pixelshuffle import __all__ as _pixelshuffle
from .pooling import *  # noqa: F403
from .pooling import __all__ as _pooling
from .rnn import *  # noqa: F403
from .rnn import __all__ as _rnn
from .sparse import *  # noqa: F403
from .sparse import __all__ as _sparse
from .transformer import *  # noqa: F403
from .transformer import __all__ as _transformer
from .upsampling import *  # noqa: F403
from .upsampling import __all__ as _upsampling

__all__ = sorted(
    [
        "Module",
        *_activation,
        *_batchnorm,
        *_container,
        *_conv,
        *_dropout,
        *_flatten,
        *_instancenorm,
        *_linear,
        *_loss,
        *_normalization,
        *_padding,
        *_rnn,
        *_pixelshuffle,
        *_pooling,
        *_sparse,
        *_multihead,
        *_transformer,
        *_upsampling,
    ]
)
