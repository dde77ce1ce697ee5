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

`fmt.encode(chunk, domain)` is the cheap size path: O(1) for dense, coo and bitmap, O(nnz) for
blocks (which blocks are occupied); it rounds values to the wire dtype so that the in-memory
`Encoded.chunk` equals what a receiver decodes. `Encoded.to_bytes()` serializes (emulator path),
`fmt.from_bytes(buf, domain)` decodes. Dense and blocks carry no ids: a receiver sees the
positions whose value is non-zero, so in indices-only mode they are written as 1.0 (the other
formats write 1.0 too, for one rule), and an explicit 0.0 value does not survive those two.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zensim.errors import ConfigError
from zensim.sparse.bits import bitmap_bytes
from zensim.sparse.chunk import SparseChunk, run_starts
from zensim.sparse.domain import Domain, ExplicitDomain, index_dtype
from zensim.sparse.values import ValueCodec, value_codec


@dataclass(frozen=True)
class Encoded:
    """A chunk in a wire format over a domain; `nbytes` is exactly what `to_bytes()` returns."""

    fmt: "Format"
    nbytes: int
    chunk: SparseChunk
    domain: Domain

    @property
    def nnz(self) -> int:
        """Number of elements the payload carries."""
        return self.chunk.nnz

    def to_bytes(self) -> bytes:
        """The exact wire bytes (values written as 1.0 in indices-only mode)."""
        buf = self.fmt.serialize(self.chunk, self.domain)
        if len(buf) != self.nbytes:
            raise AssertionError(f"{self.fmt.name}: serialized {len(buf)} bytes, size path said {self.nbytes}")
        return buf


class Format:
    """Base of the wire formats: size path, serialization, decoding; value dtype is a parameter."""

    name = "?"

    def __init__(self, value_dtype: str = "float32") -> None:
        self.value: ValueCodec = value_codec(value_dtype)

    def size(self, chunk: SparseChunk, domain: Domain) -> int:
        """Exact wire bytes of `chunk` over `domain` (values counted even when `chunk.values` is None)."""
        raise NotImplementedError

    def encode(self, chunk: SparseChunk, domain: Domain) -> Encoded:
        """The cheap path: exact size, values rounded to the wire dtype, no serialization."""
        if chunk.values is not None and self.value.name != "float32":
            chunk = SparseChunk(chunk.indices, self.value.quantize(chunk.values))
        return Encoded(self, self.size(chunk, domain), chunk, domain)

    def serialize(self, chunk: SparseChunk, domain: Domain) -> bytes:
        """The wire bytes of `chunk` over `domain` (ValueError if an id lies outside it)."""
        raise NotImplementedError

    def from_bytes(self, buf: bytes, domain: Domain, n_values: int | None = None,
                   *, with_values: bool = True) -> Encoded:
        """Decode `buf` over `domain`; `n_values`, if given, is the expected nnz (checked);
        `with_values=False` returns an indices-only chunk."""
        ids, values = self._decode(memoryview(buf), domain)
        if n_values is not None and len(ids) != n_values:
            raise ValueError(f"{self.name}: decoded {len(ids)} values, expected {n_values}")
        return Encoded(self, len(buf), SparseChunk(ids, values if with_values else None), domain)

    def _decode(self, buf: memoryview, domain: Domain) -> tuple[np.ndarray, np.ndarray]:
        """(ids int64 sorted, values float32) from the wire bytes."""
        raise NotImplementedError

    def _wire_values(self, chunk: SparseChunk) -> np.ndarray:
        """The values to write: the chunk's, or 1.0 per element in indices-only mode."""
        return chunk.values if chunk.values is not None else np.ones(chunk.nnz, np.float32)

    def _check_length(self, buf: memoryview, expected: int) -> None:
        """ValueError unless the payload has exactly the expected length."""
        if len(buf) != expected:
            raise ValueError(f"{self.name}: payload of {len(buf)} bytes, expected {expected}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(value_dtype={self.value.name!r})"


class Dense(Format):
    """Every position of the domain carries a value."""

    name = "dense"

    def size(self, chunk: SparseChunk, domain: Domain) -> int:
        return domain.size * self.value.itemsize

    def serialize(self, chunk: SparseChunk, domain: Domain) -> bytes:
        dense = np.zeros(domain.size, np.float32)
        dense[domain.positions(chunk.indices)] = self._wire_values(chunk)
        return self.value.pack(dense)

    def _decode(self, buf: memoryview, domain: Domain) -> tuple[np.ndarray, np.ndarray]:
        self._check_length(buf, domain.size * self.value.itemsize)
        dense = self.value.unpack(buf, domain.size)
        pos = np.flatnonzero(dense)
        return domain.ids(pos), dense[pos]


class COO(Format):
    """Global ids then values."""

    name = "coo"

    def size(self, chunk: SparseChunk, domain: Domain) -> int:
        return chunk.nnz * (index_dtype(domain.bound).itemsize + self.value.itemsize)

    def serialize(self, chunk: SparseChunk, domain: Domain) -> bytes:
        domain.positions(chunk.indices)  # validates membership
        ids = chunk.indices.astype(index_dtype(domain.bound)).tobytes()
        return ids + self.value.pack(self._wire_values(chunk))

    def _decode(self, buf: memoryview, domain: Domain) -> tuple[np.ndarray, np.ndarray]:
        idt = index_dtype(domain.bound)
        nnz, rest = divmod(len(buf), idt.itemsize + self.value.itemsize)
        if rest:
            raise ValueError(f"coo: payload of {len(buf)} bytes is not a whole number of elements")
        ids = np.frombuffer(buf, idt, nnz).astype(np.int64)
        return ids, self.value.unpack(buf[nnz * idt.itemsize:], nnz)


class Bitmap(Format):
    """One bit per domain position, then the values of the set bits in position order."""

    name = "bitmap"

    def size(self, chunk: SparseChunk, domain: Domain) -> int:
        return -(-domain.size // 8) + chunk.nnz * self.value.itemsize

    def serialize(self, chunk: SparseChunk, domain: Domain) -> bytes:
        return bitmap_bytes(domain.positions(chunk.indices), domain.size) + self.value.pack(self._wire_values(chunk))

    def _decode(self, buf: memoryview, domain: Domain) -> tuple[np.ndarray, np.ndarray]:
        nmap = -(-domain.size // 8)
        if len(buf) < nmap:
            raise ValueError(f"{self.name}: payload of {len(buf)} bytes shorter than its {nmap}-byte bitmap")
        bits = np.unpackbits(np.frombuffer(buf, np.uint8, nmap), count=domain.size, bitorder="little")
        pos = np.flatnonzero(bits)
        self._check_length(buf, nmap + len(pos) * self.value.itemsize)
        return domain.ids(pos), self.value.unpack(buf[nmap:], len(pos))


class HashBitmap(Bitmap):
    """ZEN Algorithm 2: the bitmap over a hash partition 𝕀_i (an ExplicitDomain)."""

    name = "hash_bitmap"

    def size(self, chunk: SparseChunk, domain: Domain) -> int:
        if not isinstance(domain, ExplicitDomain):
            raise ValueError("hash_bitmap needs an ExplicitDomain (a hash partition)")
        return super().size(chunk, domain)


class Blocks(Format):
    """OmniReduce tensor blocks: only blocks holding a non-zero are sent, as a block id + values."""

    name = "blocks"

    def __init__(self, value_dtype: str = "float32", block_size: int = 256) -> None:
        super().__init__(value_dtype)
        if block_size < 1:
            raise ConfigError(f"block size {block_size}: must be >= 1")
        self.block_size = int(block_size)

    def occupied(self, chunk: SparseChunk, domain: Domain) -> np.ndarray:
        """Sorted ids (int64) of the blocks holding at least one element of `chunk`."""
        blocks = domain.positions(chunk.indices) // self.block_size
        return blocks[run_starts(blocks)]

    def _carried_values(self, blocks: np.ndarray, domain: Domain) -> int:
        """Number of values the carried `blocks` hold (the domain's last block may be short)."""
        short = (-domain.size) % self.block_size
        return len(blocks) * self.block_size - (short if len(blocks) and blocks[-1] == self._nblocks(domain) - 1 else 0)

    def _nblocks(self, domain: Domain) -> int:
        """Number of blocks covering the domain."""
        return -(-domain.size // self.block_size)

    def size(self, chunk: SparseChunk, domain: Domain) -> int:
        blocks = self.occupied(chunk, domain)
        bid = index_dtype(self._nblocks(domain)).itemsize
        return len(blocks) * bid + self._carried_values(blocks, domain) * self.value.itemsize

    def serialize(self, chunk: SparseChunk, domain: Domain) -> bytes:
        pos = domain.positions(chunk.indices)
        blocks = self.occupied(chunk, domain)
        slot = np.searchsorted(blocks, pos // self.block_size) * self.block_size + pos % self.block_size
        flat = np.zeros(len(blocks) * self.block_size, np.float32)
        flat[slot] = self._wire_values(chunk)
        ids = blocks.astype(index_dtype(self._nblocks(domain))).tobytes()
        return ids + self.value.pack(flat[: self._carried_values(blocks, domain)])

    def _decode(self, buf: memoryview, domain: Domain) -> tuple[np.ndarray, np.ndarray]:
        bid = index_dtype(self._nblocks(domain))
        per_block = bid.itemsize + self.block_size * self.value.itemsize
        nb = -(-len(buf) // per_block)
        blocks = np.frombuffer(buf, bid, nb).astype(np.int64) if nb else np.empty(0, np.int64)
        if np.any(blocks[1:] <= blocks[:-1]) or (nb and (blocks[0] < 0 or blocks[-1] >= self._nblocks(domain))):
            raise ValueError("blocks: block ids not sorted or outside the domain")
        count = self._carried_values(blocks, domain)
        self._check_length(buf, nb * bid.itemsize + count * self.value.itemsize)
        flat = self.value.unpack(buf[nb * bid.itemsize:], count)
        slots = np.flatnonzero(flat)
        pos = blocks[slots // self.block_size] * self.block_size + slots % self.block_size
        return domain.ids(pos), flat[slots]

    def __repr__(self) -> str:
        return f"Blocks(value_dtype={self.value.name!r}, block_size={self.block_size})"


FORMATS: dict[str, type[Format]] = {f.name: f for f in (Dense, COO, Blocks, Bitmap, HashBitmap)}


def make_format(name: str, value_dtype: str = "float32", block_size: int = 256) -> Format:
    """A wire format by name (dense, coo, blocks, bitmap, hash_bitmap); ConfigError if unknown."""
    if name not in FORMATS:
        raise ConfigError(f"format {name!r}: expected one of {', '.join(FORMATS)}")
    if name == "blocks":
        return Blocks(value_dtype, block_size)
    return FORMATS[name](value_dtype)
