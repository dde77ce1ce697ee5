"""Wire formats: how a chunk over a domain crosses the wire, with exact byte counts.

All layouts are little-endian, struct-of-arrays, no header (both ends know the domain and the
format; the transport gives the byte length). `I` = index width of the domain (4 bytes when its
bound < 2**31, else 8), `V` = value width (4 float32, 2 float16/bfloat16), `|D|` = domain size.

| format      | bytes                                   | layout                                       |
| ----------- | --------------------------------------- | -------------------------------------------- |
| dense       | `V x |D|`                               | value of every position (zero where absent)  |
| coo         | `(I + V) x nnz`                         | nnz global ids, then nnz values              |
| blocks      | `B x nb + V x (values in carried blocks)` | nb block ids (B = 4, or 8 beyond 2**31 blocks), then each carried block's values (block_size, the domain's last block may be shorter) |
| bitmap      | `ceil(|D| / 8) + V x nnz`               | bit p (byte p//8, LSB first) set iff position p present, then nnz values in position order |
| hash_bitmap | as bitmap, over an `ExplicitDomain` 𝕀_i | ZEN Algorithm 2                              |
| switch      | `min` of coo and dense (dense when equal) | SparCML's sparse-to-dense switch; the length says which |

`fmt.encode(chunk, domain)` is the cheap size path: O(1) for dense, coo and bitmap, O(nnz) for
blocks (which blocks are occupied). Its `Encoded.chunk` is exactly what a receiver decodes
(`fmt.received(chunk)`): values rounded to the wire dtype (a value beyond its range is a
ValueRangeError), and, for dense and blocks, which carry no ids and show a receiver only the
non-zero positions, explicit zeros dropped. So the logged bytes are always the bytes sent.
`Encoded.to_bytes()` serializes (emulator path), `fmt.from_bytes(buf, domain)` decodes. In
indices-only mode every value is written as 1.0.

A new format is one file in this package (a `Format` subclass with `name`, `size`, `serialize`,
`_decode`) and one entry in FORMATS; tests/test_sparse_formats.py checks every registered format.
"""

from __future__ import annotations

from zensim.errors import ConfigError
from zensim.sparse.formats.base import Counted, Encoded, Format
from zensim.sparse.formats.bitmap import Bitmap, HashBitmap
from zensim.sparse.formats.blocks import Blocks
from zensim.sparse.formats.coo import COO
from zensim.sparse.formats.dense import Dense
from zensim.sparse.formats.switch import Switch

# The registry: a new format is one file in this package and one entry here.
FORMATS: dict[str, type[Format]] = {f.name: f for f in (Dense, COO, Blocks, Bitmap, HashBitmap, Switch)}


def make_format(name: str, value_dtype: str = "float32", block_size: int = 256) -> Format:
    """A wire format by name (dense, coo, blocks, bitmap, hash_bitmap, switch); ConfigError if unknown.
    `block_size` reaches the formats that take it."""
    if name not in FORMATS:
        raise ConfigError(f"format {name!r}: expected one of {', '.join(FORMATS)}")
    cls = FORMATS[name]
    return cls(value_dtype, block_size) if cls.takes_block_size else cls(value_dtype)


__all__ = ["FORMATS", "Counted", "Encoded", "Format", "make_format", "Dense", "COO", "Blocks", "Bitmap", "HashBitmap", "Switch"]
