"""``default_collate`` and ``default_convert``: PyTorch's rules for turning a list of
samples into a batch (``torch.utils.data._utils.collate``)."""

from __future__ import annotations

import collections.abc
import copy
import re
from typing import Any, Callable, Union

import numpy as np

import rustgrad as torch
from rustgrad._rustgrad import Tensor

__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]

# numpy dtypes that hold strings or objects, which do not become tensors.
_NP_STR_OBJ_DTYPE = re.compile(r"[SaUO]")

_ERR_FORMAT = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)

CollateFnMap = dict[Union[type, tuple[type, ...]], Callable]


def _is_numpy_value(data: Any) -> bool:
    kind = type(data)
    return kind.__module__ == "numpy" and kind.__name__ not in ("str_", "string_")


def _rebuild(template: Any, values: list, kind_of: Any) -> Any:
    """A container of ``template``'s type holding ``values`` (a copy that is filled in
    for mutable sequences, a new one otherwise, a plain list if the type refuses)."""
    try:
        if isinstance(template, collections.abc.MutableSequence):
            clone = copy.copy(template)
            for i, value in enumerate(values):
                clone[i] = value
            return clone
        return kind_of(values)
    except TypeError:
        return list(values)


def _rebuild_mapping(template: Any, items: dict) -> Any:
    """A mapping of ``template``'s type holding ``items``, or a dict if the type refuses."""
    try:
        if isinstance(template, collections.abc.MutableMapping):
            clone = copy.copy(template)
            clone.update(items)
            return clone
        return type(template)(items)
    except TypeError:
        return items


def default_convert(data: Any) -> Any:
    """Converts numpy arrays and scalars inside ``data`` to tensors, keeping the
    containers (the DataLoader's conversion when batching is off).

    Args:
        data: one sample.

    Returns:
        ``data`` with every numpy array (not of strings or objects) and numpy scalar
        replaced by a tensor; tuples become lists, namedtuples stay namedtuples.

    Example:
        >>> default_convert((np.array([0, 1]), 2))
        [tensor([0, 1]), 2]
    """
    if isinstance(data, torch.Tensor):
        return data
    if _is_numpy_value(data):
        if isinstance(data, np.ndarray) and _NP_STR_OBJ_DTYPE.search(data.dtype.str):
            return data
        return torch.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild(data, [default_convert(d) for d in data], type(data))
    return data


def collate(batch: list, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """Collates ``batch`` with a registry of per-type collate functions.

    An element type found in ``collate_fn_map`` (exactly, then by ``isinstance`` in the
    map's order) is collated by its function; otherwise mappings, namedtuples and
    sequences are collated field by field.

    Args:
        batch (list): the samples.
        collate_fn_map (dict, optional): element type (or tuple of types) to a function
            ``fn(batch, *, collate_fn_map)``.

    Example:
        >>> collate([1, 2], collate_fn_map={int: lambda b, collate_fn_map: sum(b)})
        3
    """
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        items = {
            key: collate([sample[key] for sample in batch], collate_fn_map=collate_fn_map)
            for key in elem
        }
        return _rebuild_mapping(elem, items)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(field, collate_fn_map=collate_fn_map) for field in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        elem_size = len(elem)
        if not all(len(sample) == elem_size for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        # Each field is the tuple zip makes, as PyTorch's: strings come back as it.
        fields = [collate(field, collate_fn_map=collate_fn_map) for field in zip(*batch)]
        if isinstance(elem, tuple):
            return fields  # a list, as PyTorch (backwards compatibility)
        return _rebuild(elem, fields, elem_type)
    raise TypeError(_ERR_FORMAT.format(elem_type))


def _collate_tensor(batch: list, *, collate_fn_map: CollateFnMap | None = None) -> torch.Tensor:
    return torch.stack(batch, 0)


def _collate_numpy_array(batch: list, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    if _NP_STR_OBJ_DTYPE.search(batch[0].dtype.str) is not None:
        raise TypeError(_ERR_FORMAT.format(batch[0].dtype))
    return collate([torch.as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def _collate_numpy_scalar(batch: list, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    if all(type(b) is type(batch[0]) for b in batch):
        # Through one numpy array: rustgrad's as_tensor of a list infers the dtype from
        # Python values (int32 scalars would become int64), PyTorch keeps numpy's.
        return torch.as_tensor(np.array(batch))
    return torch.as_tensor(batch)


def _collate_float(batch: list, *, collate_fn_map: CollateFnMap | None = None) -> torch.Tensor:
    return torch.tensor(batch, dtype=torch.float64)


def _collate_int(batch: list, *, collate_fn_map: CollateFnMap | None = None) -> torch.Tensor:
    # bools are ints: a batch of bools becomes a bool tensor, as in PyTorch.
    return torch.tensor(batch)


def _collate_str(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    # The batch as given: a list at the top or under a mapping, a tuple inside a
    # sequence (PyTorch's collate_str_fn).
    return batch


default_collate_fn_map: CollateFnMap = {
    Tensor: _collate_tensor,
    np.ndarray: _collate_numpy_array,
    (np.bool_, np.number, np.object_): _collate_numpy_scalar,
    float: _collate_float,
    int: _collate_int,
    str: _collate_str,
    bytes: _collate_str,
}


def default_collate(batch: list) -> Any:
    """Puts a list of samples together into a batch (the DataLoader's default
    ``collate_fn``).

    Tensors are stacked along a new first dimension; numpy arrays and numpy scalars
    become tensors and are stacked; Python floats become a float64 tensor, ints an int64
    tensor, bools a bool tensor; strings and bytes stay a list; dicts, namedtuples and
    other sequences are collated field by field (tuples become lists).

    Args:
        batch (list): the samples.

    Raises:
        RuntimeError: sequences of different lengths ("each element in list of batch
            should be of equal size").
        TypeError: an element of another type ("default_collate: batch must contain
            tensors, numpy arrays, numbers, dicts or lists; found ...").

    Example:
        >>> default_collate([{"x": 1.0, "y": "a"}, {"x": 2.0, "y": "b"}])
        {'x': tensor([1., 2.], dtype=torch.float64), 'y': ['a', 'b']}
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
