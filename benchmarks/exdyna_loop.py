"""ExDyna inside the training loop (zensim.replay.selection), runnable where only torch, numpy, scipy and
numba are installed (a GPU machine): the same options as `zensim exdyna-loop`, without the CLI's other
commands' imports. With `--from-csv FILE` it trains nothing: it reads a run's CSV and prints the two
claims' figures (and draws `--plot`). With `--write-corpus FILE.gz` it writes the installed KJV's text,
gzip-compressed, for a machine without the `bible` program (`--corpus FILE.gz` reads it there).

The paper's size on a GPU, stopping cleanly within 472 s (5,540 iterations on an H200 batched; outputs in
$OUT; docs/replay.md):
  .venv/bin/python benchmarks/exdyna_loop.py --write-corpus out/kjv.txt.gz      # here, once
  python benchmarks/exdyna_loop.py --embed 1100 --hidden 650 --layers 2 --batched --seconds 472 --iterations 100000 \
      --corpus out/kjv.txt.gz --price-every 100 --csv $OUT/exdyna-loop-gpu.csv --json $OUT/exdyna-loop-gpu.json
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys

from zensim.errors import ZensimError
from zensim.sim.selection_command import add_arguments


def from_csv(path: str, plot: str | None, density: float, title: str | None) -> None:
    """Print the claims' figures of a run's CSV; draw `plot` (titled `title`) if given."""
    from zensim.replay.selection import load_rows, plot as draw, summarize

    rows = load_rows(path)
    print(json.dumps(summarize(rows), indent=1))
    if plot:
        draw(rows, title or f"{path}: {len(rows)} iterations, d = {density}", plot, density)


def write_corpus(path: str) -> None:
    """The installed KJV's text (as `load_corpus` reads it), gzip-compressed, to `path`."""
    import gzip
    import shutil

    from zensim.errors import ConfigError
    from zensim.trace.capture.corpus import INSTALL_HINT, kjv_text

    bible = shutil.which("bible")
    if bible is None:
        raise ConfigError(f"--write-corpus: King James Bible not found (install with `{INSTALL_HINT}`)")
    text = kjv_text(bible)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(text)


def main() -> int:
    """Run the loop (or summarize a CSV, or write the corpus); one line on bad input."""
    if "--write-corpus" in sys.argv:
        parser = argparse.ArgumentParser(description=__doc__)
        parser.add_argument("--write-corpus", required=True, metavar="FILE.gz")
        try:
            write_corpus(parser.parse_args().write_corpus)
        except (ZensimError, OSError) as err:
            print(f"exdyna_loop: {err}", file=sys.stderr)
            return 2
        return 0
    if "--from-csv" in sys.argv:
        parser = argparse.ArgumentParser(description=__doc__)
        parser.add_argument("--from-csv", required=True)
        parser.add_argument("--plot", default=None)
        parser.add_argument("--density", type=float, default=0.001)
        parser.add_argument("--title", default=None)
        args = parser.parse_args()
        from_csv(args.from_csv, args.plot, args.density, args.title)
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args()
    args.command_line = shlex.join(["python", *sys.argv])
    try:
        return args.func(args)
    except ZensimError as err:
        print(f"exdyna_loop: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
