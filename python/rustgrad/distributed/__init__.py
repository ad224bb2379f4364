"""``rustgrad.distributed``: PyTorch's ``torch.distributed`` on MPI (Note [Distributed]).

Process groups, collectives (``all_reduce``, ``broadcast``, ``all_gather``, ...),
point-to-point messages and object collectives with PyTorch's names, signatures and
errors. ``backend="mpi"`` and ``backend="gloo"`` both run on MPI (mpi4py with the MPICH
wheel, installed by scripts/setup.sh). Launch with ``python -m rustgrad.distributed.run
--nproc-per-node N script.py`` (torchrun's environment) or ``mpirun -n N python
script.py``.
"""

from .distributed_c10d import *  # noqa: F403
from .distributed_c10d import __all__ as _c10d_all

__all__ = list(_c10d_all)
