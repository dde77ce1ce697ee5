"""Value dtypes on the wire: float32 (default), float16 and bfloat16, little-endian.

Every codec maps float32 values to the exact bytes sent and back. `quantize` rounds float32
values to the wire precision and returns float32, so that an in-memory `Encoded` carries exactly
the values a receiver would decode. numpy has no bfloat16: it is the upper 16 bits of the float32
pattern after round-to-nearest-even (NaN kept quiet, sign kept), as torch and the hardware do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zensim.errors import ConfigError
from zensim.sparse import xp as backend


@dataclass(frozen=True)
class ValueCodec:
    """One wire value dtype: `name`, `itemsize` in bytes, pack/unpack between float32 and bytes."""

    name: str
    itemsize: int
    max: float  # largest finite value

    def pack(self, values: np.ndarray) -> np.ndarray:
        """The wire bytes of `values` (any float array), `itemsize` bytes each, little-endian: a
        uint8 array of the values' library and device."""
        if not isinstance(values, np.ndarray) and hasattr(values, "dtype"):
            return backend.as_bytes_of(_torch_narrow(values, self.name))
        v = np.asarray(values, dtype=np.float32)
        if self.name == "float32":
            return backend.as_bytes_of(v.astype("<f4", copy=False))
        if self.name == "float16":
            return backend.as_bytes_of(v.astype("<f2"))
        return backend.as_bytes_of(_bf16_bits(v).astype("<u2"))

    def unpack(self, buf: bytes | memoryview | np.ndarray, count: int) -> np.ndarray:
        """Decode `count` values from `buf` (exactly count x itemsize bytes; bytes-like or a uint8
        array of any library) into float32 of the buffer's library."""
        buf = backend.as_buffer(buf)[: count * self.itemsize]
        if not isinstance(buf, np.ndarray):
            import torch

            narrow = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[self.name]
            return backend.view(buf, narrow).to(torch.float32)
        if self.name == "float32":
            return buf.view("<f4").astype(np.float32)
        if self.name == "float16":
            return buf.view("<f2").astype(np.float32)
        bits = buf.view("<u2").astype(np.uint32) << np.uint32(16)
        return bits.view(np.float32)

    def quantize(self, values: np.ndarray) -> np.ndarray:
        """`values` rounded to this dtype's precision, as float32 (no copy for float32 input); a
        torch tensor is rounded by torch's own conversion (round to nearest even, as here)."""
        if not isinstance(values, np.ndarray) and hasattr(values, "dtype"):
            return _torch_quantize(values, self.name)
        v = np.asarray(values, dtype=np.float32)
        if self.name == "float32":
            return v
        if self.name == "float16":
            return v.astype(np.float16).astype(np.float32)
        return (_bf16_bits(v).astype(np.uint32) << np.uint32(16)).view(np.float32)


def _torch_narrow(values, name: str):  # type: ignore[no-untyped-def]
    """A torch tensor's values in the wire dtype `name` (torch's own rounding: to nearest even)."""
    import torch

    return values.to({"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[name])


def _torch_quantize(values, name: str):  # type: ignore[no-untyped-def]
    """quantize for a torch tensor: float32 through torch's float16 / bfloat16 and back."""
    import torch

    return _torch_narrow(values, name).to(torch.float32)


def _bf16_bits(v: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) of float32 `v`, round-to-nearest-even, NaN stays NaN."""
    u = np.ascontiguousarray(v, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + np.uint64(0x7FFF) + ((u >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)
    nan = np.isnan(v)
    if nan.any():
        rounded[nan] = (u[nan] >> np.uint64(16)) | np.uint64(0x0040)
    return rounded.astype(np.uint16)


CODECS = {c.name: c for c in (ValueCodec("float32", 4, float(np.finfo(np.float32).max)),
                              ValueCodec("float16", 2, float(np.finfo(np.float16).max)),
                              ValueCodec("bfloat16", 2, float(np.uint32(0x7F7F0000).view(np.float32))))}


def value_codec(name: str) -> ValueCodec:
    """The codec for a value dtype name; ConfigError naming the choices if unknown."""
    try:
        return CODECS[name]
    except KeyError:
        raise ConfigError(f"value dtype {name!r}: expected one of {', '.join(CODECS)}") from None
