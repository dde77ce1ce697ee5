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
    try:
        from scipy._lib.array_api_compat import array_namespace
    except ImportError:  # scipy >= 1.17 keeps it in scipy._external
        from scipy._external.array_api_compat import array_namespace

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
    x = np.ascontiguousarray(x)
    return torch.from_numpy(x if x.flags.writeable else x.copy()).to(ref.device)


class OnDevices:
    """A constant numpy array (`host`) and its copies in the library and on the device of the arrays
    it meets, each made once, on first use (partition boundaries, a domain's elements, a position table)."""

    __slots__ = ("host", "_copies")

    def __init__(self, host: np.ndarray) -> None:
        self.host = host
        self._copies: dict[str, Array] = {}  # by device

    def like(self, ref: Array) -> Array:
        """The array in `ref`'s library and on its device."""
        if isinstance(ref, np.ndarray):
            return self.host
        key = str(device(ref))
        if key not in self._copies:
            self._copies[key] = like(self.host, ref)
        return self._copies[key]


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


def argsort(x: Array, below: int | None = None) -> Array:
    """The stable ascending order (int64 positions) of the 1-d integer array `x`, in its library and
    on its device; `below`, if given, bounds its values (keys below 2**16 then sort by radix on the
    host). A torch tensor on the CPU is sorted by numpy, through views both ways: numpy's stable sort
    merges runs already in order (a concatenation of sorted chunks, what unions and assemblies sort),
    and took 0.16 s against torch's 1.2 s on 7.6M ids in two sorted runs (one thread, the 2-core
    sandbox). A stable order is unique, so every library gives the same positions."""
    if isinstance(x, np.ndarray) or x.device.type == "cpu":
        key = host(x)
        if below is not None and below <= 1 << 16:
            key = key.astype(np.uint16)
        order = np.argsort(key, kind="stable")
        if isinstance(x, np.ndarray):
            return order
        import torch

        return torch.from_numpy(order.astype(np.int64, copy=False))
    return namespace(x).argsort(x, stable=True)


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


# --- wire buffers: 1-d uint8 arrays of any library (little-endian, as every supported host is) ---

def as_buffer(buf: Any) -> Array:
    """A received payload as a uint8 array: bytes-like objects as a numpy view, arrays as they are."""
    if isinstance(buf, (bytes, bytearray, memoryview)):
        return np.frombuffer(buf, np.uint8)
    return buf


def view(buf: Array, dtype: Any) -> Array:
    """The uint8 array `buf` read as `dtype` (its length a multiple of the item size); a copy where
    torch cannot view it in place (an offset not a multiple of the item size)."""
    if isinstance(buf, np.ndarray):
        return buf.view(dtype)
    if buf.storage_offset() % dtype.itemsize:
        buf = buf.clone()
    return buf.view(dtype)


def int_dtype(xp: ModuleType, itemsize: int) -> Any:
    """The signed integer dtype of `itemsize` bytes (4 or 8) in namespace `xp`."""
    return xp.int32 if itemsize == 4 else xp.int64


def as_bytes_of(x: Array) -> Array:
    """The bytes of the contiguous array `x` as a uint8 array of its library (a view where possible)."""
    if isinstance(x, np.ndarray):
        return np.ascontiguousarray(x).view(np.uint8).reshape(-1)
    flat = x.reshape(-1)
    if flat.stride(0) != 1:  # an expanded or one-element tensor: torch views only unit strides
        xp = namespace(x)
        flat = xp.empty(flat.shape, dtype=flat.dtype, device=flat.device).copy_(flat)
    return flat.view(namespace(x).uint8)


def concat_bytes(parts: list[Array], like: Array | None) -> Array:
    """The uint8 arrays `parts` one after the other (of `like`'s library and device; numpy when None)."""
    if like is None or isinstance(like, np.ndarray):
        return np.concatenate([host(p) for p in parts]) if parts else np.zeros(0, np.uint8)
    xp = namespace(like)
    return xp.concat(parts) if parts else xp.zeros(0, dtype=xp.uint8, device=device(like))


def packbits(mask: Array) -> Array:
    """The LSB-first bitmap (uint8, ceil(len / 8) bytes) of a boolean array."""
    if isinstance(mask, np.ndarray):
        return np.packbits(mask, bitorder="little")
    xp = namespace(mask)
    pad = (-mask.shape[0]) % 8
    bits = xp.astype(mask, xp.uint8)
    if pad:
        bits = xp.concat([bits, xp.zeros(pad, dtype=xp.uint8, device=device(mask))])
    weights = xp.asarray([1, 2, 4, 8, 16, 32, 64, 128], dtype=xp.uint8, device=device(mask))
    return xp.astype(xp.sum(xp.reshape(bits, (-1, 8)) * weights, axis=1, dtype=xp.int32), xp.uint8)


def unpackbits(buf: Array, count: int) -> Array:
    """The first `count` bits (0/1, uint8) of the LSB-first bitmap `buf`."""
    if isinstance(buf, np.ndarray):
        return np.unpackbits(buf, count=count, bitorder="little")
    xp = namespace(buf)
    shifts = xp.arange(8, dtype=xp.uint8, device=device(buf))
    return xp.reshape((buf[:, None] >> shifts) & 1, (-1,))[:count]


def locate(sorted_set: Array, x: Array) -> tuple[Array, Array]:
    """(where each entry of `x` is or would be in the non-empty sorted array `sorted_set`, clipped to
    its last position; whether it is there)."""
    xp = namespace(x)
    at = xp.clip(xp.searchsorted(sorted_set, xp.astype(x, sorted_set.dtype, copy=False)), max=sorted_set.shape[0] - 1)
    return at, sorted_set[at] == x


def lookup(table: Array, elements: Array, x: Array) -> tuple[Array, Array]:
    """`locate` by a gather: (`table[x]`, a candidate position of each entry of `x` in the non-empty
    array `elements`, clipped into it; whether `elements` holds the entry there). `table` maps every
    id in `elements` to its position (entries of other ids may be anything); `x` lies in [0, len(table))."""
    xp = namespace(x)
    at = xp.clip(xp.take(table, x, axis=0), min=0, max=elements.shape[0] - 1)
    return at, xp.take(elements, at, axis=0) == x


def isin_sorted(x: Array, sorted_set: Array) -> Array:
    """Whether each entry of `x` is in the sorted array `sorted_set` (a boolean array like x)."""
    if sorted_set.shape[0] == 0:
        xp = namespace(x)
        return xp.zeros(x.shape[0], dtype=xp.bool, device=device(x))
    return locate(sorted_set, x)[1]
