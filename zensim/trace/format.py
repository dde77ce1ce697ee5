"""The zensim trace file: a lazy, validated, compact store of per-(iteration, worker, tensor) indices.

Layout (all integers little-endian; see docs/trace-format.md):

    prefix   24 B   magic b"ZENTRACE", u32 schema version, u32 header length, u32 header CRC32, u32 0
    header          UTF-8 JSON: workload, workers, iterations, batch size, value dtype, tensors, provenance
    chunks          one per (iteration, worker, tensor), any order: index bytes then value bytes
    table           one ENTRY_DTYPE record per chunk
    footer   32 B   u64 table offset, u64 entry count, u32 table CRC32, u32 0, magic b"ZTRACEND"

`Trace.open` reads prefix, header, footer and table only; each read is one `pread` of one chunk.
"""

from __future__ import annotations

import contextlib
import json
import os
import zlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, BinaryIO

import numpy as np

from zensim.atomic import AtomicFile
from zensim.errors import TraceError
from zensim.sparse.chunk import SparseChunk
from zensim.trace import codec
from zensim.trace.layout import (
    END_MAGIC,
    ENTRY_DTYPE,
    FOOTER,
    MAGIC,
    PREFIX,
    SCHEMA_VERSION,
    VALUE_DTYPES,
    LayerSpec,  # noqa: F401  (re-exported: writers import the specs from here)
    TensorSpec,
)
from zensim.trace.validate import read_layout

def _check_indices(indices: np.ndarray, numel: int, where: str) -> None:
    """Raise TraceError unless `indices` is strictly increasing inside [0, numel)."""
    if len(indices) == 0:
        return
    steps = np.diff(indices)
    if len(steps) and steps.min() <= 0:
        bad = int(np.argmax(steps <= 0)) + 1
        kind = "duplicate" if steps[bad - 1] == 0 else "unsorted"
        raise TraceError(f"{where}: {kind} indices (position {bad}: {indices[bad - 1]} then {indices[bad]})")
    if indices[0] < 0 or indices[-1] >= numel:
        bad_value = indices[0] if indices[0] < 0 else indices[-1]
        raise TraceError(f"{where}: index {bad_value} out of range [0, {numel})")


def _chunk_name(path: str, iteration: int, worker: int, tensor: str) -> str:
    return f"{path}: iteration {iteration} worker {worker} tensor {tensor!r}"


class TraceWriter:
    """Write a trace; chunks may come in any order; the file appears only on a successful close.

    Chunks stream to a temporary file in the destination directory, renamed over `path` by `close`;
    an exception inside `with`, `abort()` or a missing chunk at close removes it and leaves no file.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        tensors: Sequence[TensorSpec],
        workers: int,
        iterations: int,
        value_dtype: str | None = None,
        batch_size: int | None = None,
        workload: str = "",
        provenance: Mapping[str, Any] | None = None,
    ) -> None:
        self.path = str(path)
        self.tensors = tuple(tensors)
        self.workers = workers
        self.iterations = iterations
        self.value_dtype = value_dtype
        header = self._header(batch_size, workload, provenance)
        self._names = {t.name: i for i, t in enumerate(self.tensors)}
        self._written = np.zeros((iterations, workers, len(self.tensors)), np.bool_)
        self._entries: list[tuple[int, ...]] = []
        self._out = AtomicFile(self.path, TraceError)
        self._file: BinaryIO | None = self._out.file
        self._file.write(PREFIX.pack(MAGIC, SCHEMA_VERSION, len(header), zlib.crc32(header), 0))
        self._file.write(header)
        self._offset = PREFIX.size + len(header)

    def _header(self, batch_size: int | None, workload: str, provenance: Mapping[str, Any] | None) -> bytes:
        """Validate the arguments and return the JSON header bytes."""
        problems = [t.problem() for t in self.tensors] if self.tensors else ["no tensors"]
        if len({t.name for t in self.tensors}) != len(self.tensors):
            problems.append("tensor names repeat")
        for name, value in (("workers", self.workers), ("iterations", self.iterations)):
            if not isinstance(value, (int, np.integer)) or value < 1:
                problems.append(f"{name} must be a positive integer, got {value!r}")
        if self.value_dtype not in (None, *VALUE_DTYPES):
            problems.append(f"value_dtype must be None, 'float32' or 'float16', got {self.value_dtype!r}")
        if batch_size is not None and (not isinstance(batch_size, (int, np.integer)) or batch_size < 1):
            problems.append(f"batch_size must be a positive integer or None, got {batch_size!r}")
        problem = next((p for p in problems if p), None)
        if problem:
            raise TraceError(f"{self.path}: {problem}")
        header = {
            "schema": SCHEMA_VERSION,
            "workload": str(workload),
            "workers": int(self.workers),
            "iterations": int(self.iterations),
            "batch_size": None if batch_size is None else int(batch_size),
            "value_dtype": self.value_dtype,
            "tensors": [t.to_json() for t in self.tensors],
            "provenance": dict(provenance or {}),
        }
        try:
            return json.dumps(header, sort_keys=True).encode()
        except (TypeError, ValueError) as exc:
            raise TraceError(f"{self.path}: provenance is not JSON-serializable ({exc})") from None

    def __enter__(self) -> "TraceWriter":
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def write(
        self, iteration: int, worker: int, tensor: int | str, indices: np.ndarray, values: np.ndarray | None = None
    ) -> None:
        """Store one chunk: sorted unique int indices in [0, numel) and, iff the trace has values, their values."""
        t, spec, where = self._slot(iteration, worker, tensor)
        idx = np.asarray(indices)
        if idx.ndim != 1 or not (np.issubdtype(idx.dtype, np.integer) or len(idx) == 0):
            raise TraceError(f"{where}: indices must be a 1-D integer array, got {idx.dtype} of shape {idx.shape}")
        idx = idx.astype(np.int64, copy=False)
        _check_indices(idx, spec.numel, where)
        value_bytes = self._value_bytes(values, len(idx), where)
        encoding, index_bytes = codec.encode_indices(idx, spec.numel)
        self._append(iteration, worker, t, encoding, index_bytes, value_bytes, len(idx))

    def write_dense(self, iteration: int, worker: int, tensor: int | str, values: np.ndarray) -> None:
        """Store one dense chunk: a value for every element of the tensor and no indices (a trace
        with values only); readers see every index, `Trace.dense` reads it without them."""
        t, spec, where = self._slot(iteration, worker, tensor)
        if self.value_dtype is None:
            raise TraceError(f"{where}: a dense chunk needs values, but the trace stores none (value_dtype=None)")
        vals = np.asarray(values)
        if vals.ndim != 1 or len(vals) != spec.numel:
            raise TraceError(f"{where}: a dense chunk needs {spec.numel} values, got shape {vals.shape}")
        self._append(iteration, worker, t, codec.DENSE, b"", self._value_bytes(vals, spec.numel, where), spec.numel)

    def _slot(self, iteration: int, worker: int, tensor: int | str) -> tuple[int, TensorSpec, str]:
        """(tensor index, spec, chunk name) of a chunk about to be written, after checking the slot."""
        if self._file is None:
            raise TraceError(f"{self.path}: write after close")
        t = self._tensor_index(tensor)
        spec = self.tensors[t]
        for name, value, bound in (("iteration", iteration, self.iterations), ("worker", worker, self.workers)):
            if not isinstance(value, (int, np.integer)) or not 0 <= value < bound:
                raise TraceError(f"{self.path}: {name} {value!r} out of range [0, {bound})")
        where = _chunk_name(self.path, iteration, worker, spec.name)
        if self._written[iteration, worker, t]:
            raise TraceError(f"{where}: chunk written twice")
        return t, spec, where

    def _append(self, iteration: int, worker: int, t: int, encoding: int, index_bytes: bytes, value_bytes: bytes,
                nnz: int) -> None:
        """Stream one chunk's bytes and remember its table entry."""
        assert self._file is not None
        crc = zlib.crc32(value_bytes, zlib.crc32(index_bytes))
        self._file.write(index_bytes)
        self._file.write(value_bytes)
        self._entries.append((iteration, worker, t, encoding, crc, self._offset, len(index_bytes), len(value_bytes), nnz))
        self._offset += len(index_bytes) + len(value_bytes)
        self._written[iteration, worker, t] = True

    def _tensor_index(self, tensor: int | str) -> int:
        if isinstance(tensor, str):
            if tensor not in self._names:
                raise TraceError(f"{self.path}: unknown tensor {tensor!r}")
            return self._names[tensor]
        if not isinstance(tensor, (int, np.integer)) or not 0 <= tensor < len(self.tensors):
            raise TraceError(f"{self.path}: tensor {tensor!r} out of range [0, {len(self.tensors)})")
        return int(tensor)

    def _value_bytes(self, values: np.ndarray | None, nnz: int, where: str) -> bytes:
        if self.value_dtype is None:
            if values is not None:
                raise TraceError(f"{where}: values given but the trace stores none (value_dtype=None)")
            return b""
        if values is None:
            raise TraceError(f"{where}: values missing (the trace stores {self.value_dtype} values)")
        vals = np.asarray(values)
        if vals.ndim != 1 or len(vals) != nnz:
            raise TraceError(f"{where}: value count mismatch ({vals.size} values for {nnz} indices)")
        return vals.astype(np.dtype(self.value_dtype).newbyteorder("<"), copy=False).tobytes()

    def close(self) -> None:
        """Check every chunk was written, write table and footer, and rename into place."""
        if self._file is None:
            return
        missing = np.argwhere(~self._written)
        if len(missing):
            it, w, t = (int(v) for v in missing[0])
            self.abort()
            raise TraceError(
                f"{_chunk_name(self.path, it, w, self.tensors[t].name)}: never written "
                f"({len(missing)} chunks missing; no trace file written)"
            )
        table = np.array(self._entries, ENTRY_DTYPE).tobytes()
        self._file.write(table)
        self._file.write(FOOTER.pack(self._offset, len(self._entries), zlib.crc32(table), 0, END_MAGIC))
        self._file = None
        self._out.commit()

    def abort(self) -> None:
        """Discard everything written so far; no trace file is created."""
        if self._file is not None:
            self._file = None
            self._out.discard()

    def __del__(self) -> None:
        if getattr(self, "_file", None) is not None:
            self.abort()


class Trace:
    """A trace opened for reading: metadata and chunk table in memory, chunks read on demand."""

    def __init__(self, path: str, header: dict[str, Any], table: np.ndarray, file: Any) -> None:
        self.path = path
        self.meta = header
        self.workers: int = header["workers"]
        self.iterations: int = header["iterations"]
        self.value_dtype: str | None = header["value_dtype"]
        self.tensors: tuple[TensorSpec, ...] = tuple(TensorSpec.from_json(t) for t in header["tensors"])
        self.tensor_offsets = np.concatenate([[0], np.cumsum([t.numel for t in self.tensors])]).astype(np.int64)
        self.numel = int(self.tensor_offsets[-1])
        self._table = table
        self._file = file

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> "Trace":
        """Open and validate prefix, header, footer and chunk table; chunks are read lazily."""
        path = str(path)
        try:
            file = open(path, "rb")
        except OSError as exc:
            raise TraceError(f"{path}: cannot open ({exc.strerror})") from None
        try:
            header, table = read_layout(path, file)
        except BaseException:
            file.close()
            raise
        return cls(path, header, table, file)

    def __enter__(self) -> "Trace":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the file; further reads raise TraceError."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (Trace.open, (self.path,))

    def __repr__(self) -> str:
        return (
            f"Trace({self.path!r}, workers={self.workers}, iterations={self.iterations}, "
            f"tensors={len(self.tensors)}, numel={self.numel}, value_dtype={self.value_dtype})"
        )

    def tensor_index(self, tensor: int | str) -> int:
        """Resolve a tensor name or index to its index (TraceError if unknown)."""
        for i, spec in enumerate(self.tensors):
            if tensor == i or tensor == spec.name:
                return i
        raise TraceError(f"{self.path}: unknown tensor {tensor!r}")

    def _entry(self, iteration: int, worker: int, tensor: int | str) -> tuple[np.void, int]:
        t = self.tensor_index(tensor)
        for name, value, bound in (("iteration", iteration, self.iterations), ("worker", worker, self.workers)):
            if not isinstance(value, (int, np.integer)) or not 0 <= value < bound:
                raise TraceError(f"{self.path}: {name} {value!r} out of range [0, {bound})")
        return self._table[(iteration * self.workers + worker) * len(self.tensors) + t], t

    def nnz(self, iteration: int, worker: int, tensor: int | str | None = None) -> int:
        """Non-zeros of one chunk (or of all tensors when `tensor` is None), from the table alone."""
        if tensor is None:
            return sum(self.nnz(iteration, worker, t) for t in range(len(self.tensors)))
        return int(self._entry(iteration, worker, tensor)[0]["nnz"])

    @property
    def is_dense(self) -> bool:
        """Whether every chunk is dense (a dense-gradient trace: values for every element)."""
        return bool(len(self._table)) and bool(np.all(self._table["encoding"] == codec.DENSE))

    def chunk_is_dense(self, iteration: int, worker: int, tensor: int | str = 0) -> bool:
        """Whether one chunk is stored dense (values for every element, no indices)."""
        return int(self._entry(iteration, worker, tensor)[0]["encoding"]) == codec.DENSE

    def _chunk_bytes(self, entry: np.void, where: str) -> bytes:
        """One chunk's index and value bytes, CRC-checked, in one read."""
        if self._file is None:
            raise TraceError(f"{self.path}: trace is closed")
        n_index, n_value = int(entry["index_nbytes"]), int(entry["value_nbytes"])
        data = os.pread(self._file.fileno(), n_index + n_value, int(entry["offset"]))
        if len(data) != n_index + n_value:
            raise TraceError(f"{where}: truncated chunk (file shrank after open)")
        if zlib.crc32(data) != int(entry["crc"]):
            raise TraceError(f"{where}: corrupt chunk (CRC32 mismatch)")
        return data

    def _read_chunk(self, iteration: int, worker: int, tensor: int | str) -> tuple[np.ndarray, np.ndarray | None]:
        entry, t = self._entry(iteration, worker, tensor)
        spec = self.tensors[t]
        where = _chunk_name(self.path, iteration, worker, spec.name)
        data = self._chunk_bytes(entry, where)
        n_index = int(entry["index_nbytes"])
        try:
            indices = codec.decode_indices(int(entry["encoding"]), data[:n_index], int(entry["nnz"]), spec.numel)
        except codec.CodecError as exc:
            raise TraceError(f"{where}: corrupt indices ({exc})") from None
        if len(indices) != int(entry["nnz"]):
            raise TraceError(f"{where}: {len(indices)} indices, table says {int(entry['nnz'])}")
        if int(entry["encoding"]) != codec.DENSE:  # a dense chunk's indices are 0 .. numel - 1 by construction
            _check_indices(indices, spec.numel, where)
        if self.value_dtype is None:
            return indices, None
        values = np.frombuffer(data, np.dtype(self.value_dtype).newbyteorder("<"), offset=n_index)
        return indices, values.astype(self.value_dtype)

    def indices(self, iteration: int, worker: int, tensor: int | str = 0) -> np.ndarray:
        """Sorted unique int64 element indices of one chunk (validated)."""
        return self._read_chunk(iteration, worker, tensor)[0]

    def values(self, iteration: int, worker: int, tensor: int | str = 0) -> np.ndarray | None:
        """The chunk's values in the stored dtype, or None for an indices-only trace."""
        return self._read_chunk(iteration, worker, tensor)[1]

    def read(self, iteration: int, worker: int, tensor: int | str = 0) -> SparseChunk:
        """One chunk as a SparseChunk (values converted to float32, or None), with one read."""
        indices, values = self._read_chunk(iteration, worker, tensor)
        return SparseChunk(indices, None if values is None else values.astype(np.float32))

    def dense(self, iteration: int, worker: int, tensor: int | str = 0, out: np.ndarray | None = None) -> np.ndarray:
        """One tensor's gradient as a dense float32 vector (into `out` if given): a dense chunk is read
        without indices; a sparse chunk is scattered into zeros. Needs a trace with values."""
        entry, t = self._entry(iteration, worker, tensor)
        spec = self.tensors[t]
        where = _chunk_name(self.path, iteration, worker, spec.name)
        if self.value_dtype is None:
            raise TraceError(f"{where}: no values in this trace (indices only), so no dense gradient")
        out = np.empty(spec.numel, np.float32) if out is None else out
        if int(entry["encoding"]) != codec.DENSE:
            chunk = self.read(iteration, worker, t)
            out[:] = 0
            out[chunk.indices] = chunk.values
            return out
        data = self._chunk_bytes(entry, where)
        out[:] = np.frombuffer(data, np.dtype(self.value_dtype).newbyteorder("<"))
        return out

    def flat_dense(self, iteration: int, worker: int, out: np.ndarray | None = None) -> np.ndarray:
        """All tensors' dense gradients of one (iteration, worker) in the flat index space (float32)."""
        out = np.empty(self.numel, np.float32) if out is None else out
        for t, (lo, hi) in enumerate(zip(self.tensor_offsets[:-1], self.tensor_offsets[1:])):
            self.dense(iteration, worker, t, out[lo:hi])
        return out

    def flat_indices(self, iteration: int, worker: int) -> np.ndarray:
        """All tensors' indices in one index space [0, numel): tensor t's index i becomes offset_t + i."""
        return self.flat_read(iteration, worker).indices

    def flat_read(self, iteration: int, worker: int) -> SparseChunk:
        """All tensors of one (iteration, worker) concatenated in the flat index space, values float32 or None."""
        chunks = [self.read(iteration, worker, t) for t in range(len(self.tensors))]
        if len(chunks) == 1:  # one tensor: its ids are the flat ids (no copies)
            return chunks[0]
        indices = np.concatenate([c.indices + off for c, off in zip(chunks, self.tensor_offsets[:-1])])
        if self.value_dtype is None:
            return SparseChunk(indices, None)
        return SparseChunk(indices, np.concatenate([c.values for c in chunks]))



def trace_path(source: str | os.PathLike[str] | Trace) -> str:
    """The file of a trace input (a path, or an open `Trace`): for what must reopen it elsewhere (rank
    processes) or find files beside it."""
    return source.path if isinstance(source, Trace) else os.fspath(source)

@contextlib.contextmanager
def opened(source: str | os.PathLike[str] | Trace) -> Iterator[Trace]:
    """The one input type of every function that reads a trace: a path (opened here, closed on exit) or
    an open `Trace` (used as is and left open: its owner closes it)."""
    if isinstance(source, Trace):
        yield source
        return
    with Trace.open(source) as trace:
        yield trace
