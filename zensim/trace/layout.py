"""The trace file's binary layout and tensor specs: constants shared by the reader, the writer and
the open-time validation (docs/trace-format.md)."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SCHEMA_VERSION = 1
MAGIC = b"ZENTRACE"
END_MAGIC = b"ZTRACEND"
PREFIX = struct.Struct("<8sIIII")
FOOTER = struct.Struct("<QQII8s")
VALUE_DTYPES = ("float32", "float16")
ENTRY_DTYPE = np.dtype(
    [
        ("iteration", "<u4"),
        ("worker", "<u4"),
        ("tensor", "<u4"),
        ("encoding", "u1"),
        ("crc", "<u4"),
        ("offset", "<u8"),
        ("index_nbytes", "<u8"),
        ("value_nbytes", "<u8"),
        ("nnz", "<u8"),
    ]
)


@dataclass(frozen=True)
class LayerSpec:
    """One layer inside a (bucket) tensor: elements [offset, offset + numel) of that tensor."""

    name: str
    offset: int
    numel: int


@dataclass(frozen=True)
class TensorSpec:
    """A gradient tensor (or bucket) of `numel` elements; `layers` keep bucket boundaries (default: one layer)."""

    name: str
    numel: int
    layers: tuple[LayerSpec, ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.layers:
            object.__setattr__(self, "layers", (LayerSpec(self.name, 0, self.numel),))
        else:
            object.__setattr__(self, "layers", tuple(self.layers))

    def problem(self) -> str | None:
        """Why this spec is invalid, or None."""
        if not isinstance(self.name, str) or not self.name:
            return "tensor name must be a non-empty string"
        if not isinstance(self.numel, (int, np.integer)) or self.numel < 1:
            return f"tensor {self.name!r}: numel must be a positive integer, got {self.numel!r}"
        end = 0
        for layer in sorted(self.layers, key=lambda l: l.offset):
            if layer.offset < end or layer.numel < 0 or layer.offset + layer.numel > self.numel:
                return f"tensor {self.name!r}: layer {layer.name!r} overlaps another or leaves [0, {self.numel})"
            end = layer.offset + layer.numel
        return None

    def to_json(self) -> dict[str, Any]:
        """The header representation."""
        return {
            "name": self.name,
            "numel": int(self.numel),
            "layers": [{"name": l.name, "offset": int(l.offset), "numel": int(l.numel)} for l in self.layers],
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "TensorSpec":
        """Inverse of `to_json` (KeyError/TypeError on a malformed object)."""
        layers = tuple(LayerSpec(str(l["name"]), int(l["offset"]), int(l["numel"])) for l in obj["layers"])
        return cls(str(obj["name"]), int(obj["numel"]), layers)
