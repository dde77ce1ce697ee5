"""Open-time validation of a trace file: prefix, header, footer and chunk table (chunks are checked on read)."""

from __future__ import annotations

import json
import os
import zlib
from typing import IO, Any

import numpy as np

from zensim.errors import TraceError
from zensim.trace import codec
from zensim.trace.layout import (
    END_MAGIC,
    ENTRY_DTYPE,
    FOOTER,
    MAGIC,
    PREFIX,
    SCHEMA_VERSION,
    VALUE_DTYPES,
    TensorSpec,
)


def read_layout(path: str, file: IO[bytes]) -> tuple[dict[str, Any], np.ndarray]:
    """Return (header, chunk table in (iteration, worker, tensor) order) or raise a one-line TraceError."""
    fd = file.fileno()
    size = os.fstat(fd).st_size
    prefix = os.pread(fd, PREFIX.size, 0)
    if len(prefix) < len(MAGIC) or prefix[: len(MAGIC)] != MAGIC:
        raise TraceError(f"{path}: not a zensim trace (bad magic)")
    if len(prefix) < PREFIX.size:
        raise TraceError(f"{path}: truncated file ({size} bytes, no complete prefix)")
    _, version, header_len, header_crc, reserved = PREFIX.unpack(prefix)
    if version != SCHEMA_VERSION:
        raise TraceError(f"{path}: unknown schema version {version} (this zensim reads {SCHEMA_VERSION})")
    if reserved != 0:  # schema 1 writes 0: anything else is corruption or a format this reader does not know
        raise TraceError(f"{path}: corrupt prefix (reserved field is {reserved:#x}, schema 1 writes 0)")
    data_start = PREFIX.size + header_len
    if data_start + FOOTER.size > size:
        raise TraceError(f"{path}: truncated file ({size} bytes, header and footer need {data_start + FOOTER.size})")
    raw_header = os.pread(fd, header_len, PREFIX.size)
    if zlib.crc32(raw_header) != header_crc:
        raise TraceError(f"{path}: corrupt header (CRC32 mismatch)")
    header = _parse_header(path, raw_header)
    table_offset, n_entries, table_crc, reserved, end_magic = FOOTER.unpack(os.pread(fd, FOOTER.size, size - FOOTER.size))
    if end_magic != END_MAGIC:
        raise TraceError(f"{path}: truncated or corrupt file (no footer)")
    if reserved != 0:
        raise TraceError(f"{path}: corrupt footer (reserved field is {reserved:#x}, schema 1 writes 0)")
    if table_offset < data_start or table_offset + n_entries * ENTRY_DTYPE.itemsize + FOOTER.size != size:
        raise TraceError(f"{path}: corrupt footer (chunk table does not fit the file size {size})")
    raw_table = os.pread(fd, n_entries * ENTRY_DTYPE.itemsize, table_offset)
    if zlib.crc32(raw_table) != table_crc:
        raise TraceError(f"{path}: corrupt chunk table (CRC32 mismatch)")
    table = np.frombuffer(raw_table, ENTRY_DTYPE)
    return header, _grid_table(path, header, table, data_start, table_offset)


def _parse_header(path: str, raw: bytes) -> dict[str, Any]:
    """Decode and check the JSON header's fields."""
    try:
        header = json.loads(raw)
        tensors = [TensorSpec.from_json(t) for t in header["tensors"]]
        fields = (header["workers"], header["iterations"], header["value_dtype"], header["schema"])
    except (ValueError, KeyError, TypeError) as exc:
        raise TraceError(f"{path}: corrupt header ({type(exc).__name__}: {exc})") from None
    workers, iterations, value_dtype, schema = fields
    problems = [t.problem() for t in tensors] or ["no tensors"]
    if schema != SCHEMA_VERSION:
        problems.append(f"header schema {schema!r} differs from the prefix's {SCHEMA_VERSION}")
    if not (isinstance(workers, int) and workers >= 1 and isinstance(iterations, int) and iterations >= 1):
        problems.append(f"bad workers/iterations {workers!r}/{iterations!r}")
    if value_dtype not in (None, *VALUE_DTYPES):
        problems.append(f"unknown value dtype {value_dtype!r}")
    problem = next((p for p in problems if p), None)
    if problem:
        raise TraceError(f"{path}: corrupt header ({problem})")
    return header


def _grid_table(path: str, header: dict[str, Any], table: np.ndarray, data_start: int, data_end: int) -> np.ndarray:
    """Check every entry and that each (iteration, worker, tensor) appears once; return them in grid order."""
    workers, iterations, n_tensors = header["workers"], header["iterations"], len(header["tensors"])
    names = [t["name"] for t in header["tensors"]]
    for column, bound in (("iteration", iterations), ("worker", workers), ("tensor", n_tensors)):
        if len(table) and int(table[column].max()) >= bound:
            raise TraceError(f"{path}: chunk table names {column} {int(table[column].max())} beyond [0, {bound})")
    key = (table["iteration"].astype(np.int64) * workers + table["worker"]) * n_tensors + table["tensor"]
    order = np.argsort(key, kind="stable")
    table, key = table[order], key[order]
    repeated = np.flatnonzero(key[1:] == key[:-1])
    if len(repeated):
        it, w, t = _unkey(int(key[repeated[0]]), workers, n_tensors)
        raise TraceError(f"{path}: corrupt chunk table (iteration {it} worker {w} tensor {names[t]!r} twice)")
    expected = iterations * workers * n_tensors
    if len(key) != expected:
        it, w, t = _unkey(int(np.setdiff1d(np.arange(expected), key)[0]), workers, n_tensors)
        raise TraceError(
            f"{path}: missing worker or iteration (iteration {it} worker {w} tensor {names[t]!r} absent, "
            f"{expected - len(key)} chunks missing)"
        )
    _check_entries(path, header, table, data_start, data_end)
    return table


def _unkey(key: int, workers: int, n_tensors: int) -> tuple[int, int, int]:
    return key // (workers * n_tensors), key // n_tensors % workers, key % n_tensors


def _check_entries(path: str, header: dict[str, Any], table: np.ndarray, data_start: int, data_end: int) -> None:
    """Vectorized per-entry checks: encoding, bounds, nnz <= numel, value bytes = nnz x value size."""
    numel = np.array([t["numel"] for t in header["tensors"]], np.uint64)[table["tensor"]]
    nnz, n_index, n_value = table["nnz"], table["index_nbytes"], table["value_nbytes"]
    itemsize = 0 if header["value_dtype"] is None else np.dtype(header["value_dtype"]).itemsize
    bitmap = table["encoding"] == codec.BITMAP
    dense = table["encoding"] == codec.DENSE
    checks = [
        (~np.isin(table["encoding"], codec.ENCODINGS), "unknown index encoding"),
        ((table["offset"] < data_start) | (table["offset"] + n_index + n_value > data_end), "chunk outside the data"),
        (nnz > numel, "more indices than elements"),
        (n_value != nnz * np.uint64(itemsize), "value count mismatch (value bytes != indices x value size)"),
        (bitmap & (n_index != (numel + np.uint64(7)) // np.uint64(8)), "bitmap size does not match the tensor"),
        (dense & ((n_index != 0) | (nnz != numel)), "dense chunk with index bytes or fewer values than elements"),
        (~bitmap & ~dense & ((n_index < nnz) | (n_index > nnz * np.uint64(10))), "varint size impossible for its count"),
    ]
    for bad, problem in checks:
        if bad.any():
            e = table[int(np.argmax(bad))]
            name = header["tensors"][int(e["tensor"])]["name"]
            raise TraceError(f"{path}: iteration {e['iteration']} worker {e['worker']} tensor {name!r}: {problem}")
