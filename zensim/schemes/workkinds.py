"""What each step of a stage program costs, named for the simulator's local-work model.

A stage program meters its local work as (kind, count) records (`RunContext.add`); the simulator
prices each record t(x) = alpha + beta x with the profile's costs of that kind
(zensim.net.profile.WorkCost). The kinds follow what the step really does, so that one fitted cost
per kind holds for every scheme:

- by wire format: a COO piece is encoded and decoded per element (`encode.coo`, `decode.coo`); a
  bitmap per element for its values and per domain position for its bits (`encode.bitmap` +
  `pack.bitmap`, `decode.bitmap` + `unpack.bitmap`); a dense payload is one pass over every
  position of its domain (`scan.dense`), whatever it holds; a block payload per element and per
  value slot it carries (`scan.blocks`); SparCML's switch as the COO or dense payload it is;
- by partition: encoding into a hash partition (an explicit set of ids) finds every element's
  position by a binary search (`search`, per element); a range partition's position is a
  subtraction, and splitting a chunk into ranges is a few slices (`slice`) where a hash partition
  hashes every element (`hash`);
- merges: pieces of a dense format are added position by position (`add.dense`, domain positions
  per piece added); any other pieces are a union of sorted ids: a sort of the k pieces' m elements
  together (sorted runs: m (1 + ceil(log2 k)) steps, `merge.coo` counts those); a single piece is
  no merge.

`zensim work measure --kernels steps` times the code behind every kind on this machine
(zensim.schemes.workbench); emulate.calibrate writes those fits into the profile.
"""

from __future__ import annotations

from typing import Any

from zensim.sparse.domain import ExplicitDomain
from zensim.sparse.formats import Format, Switch
from zensim.sparse.formats.dense import DenseEncoded

Work = list[tuple[str, Any]]


def format_work(op: str, fmt: Format, hashed: bool, nnz: Any, positions: Any, nbytes: Any = 0) -> Work:
    """The records of encoding (`op` 'encode') or decoding ('decode') payloads in `fmt` holding `nnz`
    elements over domains of `positions` in all (hash partitions when `hashed`; `nbytes`: their size,
    for the formats whose work depends on it). Counts may be numpy arrays (one per rank: the logs
    made from counts, zensim.schemes.sized). SparCML's switch is priced as the format it picked
    (`payload_work`)."""
    name = fmt.name
    if name == "dense":
        return [("scan.dense", positions)]
    name = "bitmap" if name == "hash_bitmap" else name
    out = [(f"{op}.{name}", nnz)]
    if op == "encode" and hashed:
        out.append(("search", nnz))
    if name == "bitmap":
        out.append(("pack.bitmap" if op == "encode" else "unpack.bitmap", positions))
    elif name == "blocks":
        out.append(("scan.blocks", nbytes // fmt.value.itemsize))
    return out


def payload_work(op: str, payload) -> Work:  # type: ignore[no-untyped-def]
    """`format_work` of one payload of zensim.schemes.wire (Encoded, BitEncoded or DenseEncoded)."""
    domain, fmt = payload.domain, payload.fmt
    if isinstance(payload, DenseEncoded):
        return [("scan.dense", domain.size)]
    nnz = payload.piece.nnz if hasattr(payload, "piece") else payload.nnz
    if isinstance(fmt, Switch):
        fmt = fmt.dense if fmt.is_dense(nnz, domain) else fmt.coo
    return format_work(op, fmt, isinstance(domain, ExplicitDomain), nnz, domain.size, payload.nbytes)


def merge_work(dense: bool, positions: Any, total: Any, pieces: int) -> Work:
    """The records of merging `pieces` pieces of `total` elements in all: added position by position
    over domains of `positions` when `dense` (a scheme whose push format is dense), else a union of
    sorted ids (1 + ceil(log2 pieces) steps per element); none for a single piece. Counts may be
    numpy arrays (one per rank)."""
    if pieces < 2:
        return []
    if dense:
        return [("add.dense", positions * (pieces - 1))]
    return [("merge.coo", total * (1 + (pieces - 1).bit_length()))]
