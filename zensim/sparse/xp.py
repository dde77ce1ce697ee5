"""The array backend of the sparse kernels: one code path over numpy or torch (any device).

The stage programs' local work (chunks, unions and sums, partitioners, wire formats, hashing) is
written once against the Python array API standard, in the vocabulary numpy >= 2.1 and
`array_api_compat.torch` share (`sort`, `argsort(stable=True)`, `concat`, `nonzero`,
`searchsorted`, `cumulative_sum`, `astype`, `zeros(..., device=)`, ...). `namespace(x)` returns
that vocabulary for an array: the numpy module itself for numpy arrays (numpy 2.x implements the
standard in its main namespace, so the simulator's default pays nothing for the indirection), and
array-api-compat's wrapper for anything else (torch tensors on the CPU or a GPU).

The few things the standard leaves out, and that the kernels need, are here, each written once
over a namespace (`segment_sum`, `run_starts`, `bincount`, `split`) or, where the two libraries
need different code to give the same bits, with one branch per library (`host`, `like`).
Everything is deterministic on every device: a kernel never relies on which of several writers
of one slot wins or on the order of atomic additions, so numpy and torch give identical bits
(tests/test_backends.py, and the scheme conformance suite run on both).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

try:
    from array_api_compat import array_namespace
except ImportError:  # a bare GPU host with only torch, numpy and scipy: scipy ships the same package
    from scipy._lib.array_api_compat import array_namespace

Array = Any  # a numpy array or a torch tensor (or another array-API array)


def namespace(*arrays: Array) -> ModuleType:
    """The array namespace of `arrays` (numpy itself for numpy arrays; None entries and Python
    sequences and scalars ignored)."""
    for a in arrays:  # the simulator's case, numpy throughout, costs one isinstance per argument
        if not isinstance(a, np.ndarray) and a is not None and hasattr(a, "shape"):
            return array_namespace(*[x for x in arrays if x is not None and hasattr(x, "shape")])
    return np


def is_numpy(x: Array) -> bool:
    """Whether `x` is a numpy array (the simulator's backend)."""
    return isinstance(x, np.ndarray)


def host(x: Array) -> np.ndarray:
    """`x` as a numpy array on the host (no copy for a numpy array)."""
    if isinstance(x, np.ndarray):
        return x
    return x.detach().cpu().numpy()


def like(x: np.ndarray | Array, ref: Array) -> Array:
    """`x` (a numpy array, or an array of ref's library) in `ref`'s library and on its device."""
    if isinstance(ref, np.ndarray):
        return host(x)
    import torch  # only reached with torch arrays

    if isinstance(x, torch.Tensor):
        return x.to(ref.device)
    return torch.from_numpy(np.ascontiguousarray(x)).to(ref.device)


def device(x: Array) -> Any:
    """The device of `x` ("cpu" for numpy arrays)."""
    return getattr(x, "device", "cpu")


def run_starts(sorted_values: Array) -> Array:
    """Boolean mask of the first element of each run of equal values in a sorted 1-d array."""
    if isinstance(sorted_values, np.ndarray):  # in place: the simulator's hot path
        first = np.ones(len(sorted_values), np.bool_)
        np.not_equal(sorted_values[1:], sorted_values[:-1], out=first[1:])
        return first
    xp = namespace(sorted_values)
    first = xp.ones(sorted_values.shape[0], dtype=xp.bool, device=device(sorted_values))
    if sorted_values.shape[0] > 1:
        first[1:] = sorted_values[1:] != sorted_values[:-1]
    return first


def flatnonzero(mask: Array) -> Array:
    """Positions (int64) of the true or non-zero entries of a 1-d array."""
    xp = namespace(mask)
    return xp.astype(xp.nonzero(mask)[0], xp.int64)


def segment_sum(values: Array, starts: Array) -> Array:
    """Per segment [starts[i], starts[i+1]) of `values` (the last to the end), the sum of its
    entries taken left to right in the dtype of `values`.

    The order is part of the result (float addition does not associate): the sum runs over each
    segment's j-th entry for j = 0, 1, ..., one vectorized pass per j, so a segment of length L
    costs L passes over the segments that long, and every device adds in the same order (no
    atomics, no pairwise tree). Segments are short where this is used (an id appears at most once
    per summed chunk)."""
    xp = namespace(values, starts)
    dev = device(values)
    n = values.shape[0]
    if starts.shape[0] == 0:
        return xp.zeros(0, dtype=values.dtype, device=dev)
    ends = xp.concat([starts[1:], xp.asarray([n], dtype=starts.dtype, device=dev)])
    lengths = ends - starts
    out = values[starts]  # a gather: a new array, the first term of every segment
    if out is values:  # pragma: no cover - every library copies on an integer-array gather
        out = xp.asarray(out, copy=True)
    longest = int(xp.max(lengths))
    live = xp.arange(starts.shape[0], device=dev)
    for j in range(1, longest):
        live = live[lengths[live] > j]
        out[live] = out[live] + values[starts[live] + j]
    return out


def bincount(x: Array, minlength: int) -> Array:
    """Counts (int64) of each value 0..minlength-1 in the non-negative int array `x` (values
    below minlength)."""
    if isinstance(x, np.ndarray):
        return np.bincount(x, minlength=minlength).astype(np.int64, copy=False)
    import torch

    return torch.bincount(x, minlength=minlength).to(torch.int64)


def split(x: Array, counts: list[int]) -> list[Array]:
    """`x` cut into consecutive pieces of the given lengths (views)."""
    out, at = [], 0
    for c in counts:
        out.append(x[at:at + c])
        at += c
    return out


def claim(row: Array, target: Array, ids: Array) -> None:
    """row[target] = ids where several ids target one slot and the largest of them wins (a
    deterministic stand-in for a race of parallel writers). `ids` must ascend: numpy's integer-
    array assignment writes in order, so its last (largest) writer stays, which is what torch's
    `scatter_reduce(amax)` gives on every device (a plain torch assignment picks any writer)."""
    if isinstance(row, np.ndarray):
        row[target] = ids
        return
    row.scatter_reduce_(0, target, ids.to(row.dtype), reduce="amax")
