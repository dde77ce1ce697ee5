"""The aggregation dimension: when a rank merges what it holds, and a hook after every merge.

- `Incremental` merges the pieces it is about to send into one (aggregate at every stage);
- `OneShot` sends the pieces side by side and aggregates only once an item is complete.

`after_merge(piece, rank, ctx)` runs on every piece a merge produces (before it is kept or
sent): the identity here; a value-dependent scheme (SparDL's re-selection of top-k in every block
before each send) overrides it, drops elements and reports them with `ctx.discard`.

Merges sum values in a canonical order (by the lowest contributing rank), so that two ranks that
merge the same pieces get bit-identical sums whatever order the pieces arrived in.
"""

from __future__ import annotations

from zensim.run.context import RunContext
from zensim.schemes.options import Option
from zensim.schemes.pieces import Piece
from zensim.schemes.plans import Transfer, full


class Aggregation:
    """Base of the aggregation strategies; declares what it needs and accepts."""

    name = "?"
    one_shot = False
    needs_values = False
    lossless = True
    OPTIONS: tuple[Option, ...] = ()

    def count(self, t: Transfer, n: int) -> int:
        """Number of pieces a transfer carries."""
        raise NotImplementedError

    def after_merge(self, piece: Piece, rank: int, ctx: RunContext) -> Piece:
        """The piece to keep and send after a merge on `rank` (the identity: lossless)."""
        return piece


class Incremental(Aggregation):
    """Aggregate at every stage: a transfer is one merged piece."""

    name = "incremental"

    def count(self, t: Transfer, n: int) -> int:
        """One piece."""
        return 1


class OneShot(Aggregation):
    """Aggregate only once everything is there: a transfer carries each rank's piece separately."""

    name = "one-shot"
    one_shot = True

    def count(self, t: Transfer, n: int) -> int:
        """One piece per origin rank, or one aggregate when the item is complete."""
        return 1 if t.origins == full(n) else t.origins.bit_count()
