"""The capture's typed request (`zensim capture`): a built-in workload trained by virtual workers, your
DDP script under torchrun with the recording hook (--hook), or your script once here as N virtual ranks
(--script). One field per flag (zensim.request's mapping: flag, help, default, check); the rules between
fields are `validate`; `run()` captures and says what it wrote."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zensim.atomic import check_new_output
from zensim.errors import ConfigError
from zensim.request import Request, Where, choice, integer, option, optional, parsed, remainder, switch, text
from zensim.trace.capture.names import SPARSIFIERS, WORKLOADS

TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
ONE_OF = "source"  # --workload, --hook or --script


def globs(value: Any, where: Where) -> tuple[str, ...]:
    """A comma list of parameter-name globs ('embedding.*,*.bias')."""
    names = tuple(g.strip() for g in str(value).split(",") if g.strip())
    if not names:
        raise ConfigError(f"{where.name}: expected comma-separated parameter names or globs, got {value!r}")
    return names


@dataclass(frozen=True)
class CaptureRequest(Request):
    """A trace capture: what trains (a workload, a hooked script, a script as virtual ranks), what is
    recorded (iterations, sparsifier, values, parameters) and where it goes."""

    workload: str | None = option(None, "built-in workload (virtual workers)", optional(choice("workload", WORKLOADS)),
                                  one_of=ONE_OF)
    hook: str | None = option(None, "your DDP training script (arguments after --)", optional(text("a script")),
                              one_of=ONE_OF, metavar="SCRIPT")
    script: str | None = option(None, "your DDP training script, run once here as --ranks N virtual ranks (arguments "
                                "after --)", optional(text("a script")), one_of=ONE_OF, metavar="SCRIPT")
    ranks: int | None = option(None, "with --workload: virtual workers; with --script: virtual ranks N",
                               optional(parsed(int)))
    iterations: int | None = option(None, "recorded iterations", optional(parsed(int)), required=True)
    warmup: int = option(0, "training steps before the first recorded one", parsed(int))
    sparsifier: str | None = option(None, "default: natural (gpt-topk: topk)",
                                    optional(choice("sparsifier", SPARSIFIERS)))
    density: float | None = option(None, "fraction kept by topk / dgc (gpt-topk default 0.01)", optional(parsed(float)))
    values: bool = option(False, "store the sent values too", switch, switch=True)
    dense: bool = option(False, "record every worker's whole gradient before any selection (a dense-gradient trace, "
                         "for replaying sparsifiers and schemes; see docs/trace-format.md for sizes)", switch, switch=True)
    value_dtype: str = option("float32", "how values are stored (with --values or --dense; default float32)",
                              choice("value dtype", ("float32", "float16")))
    batch_size: int | None = option(None, "per-worker micro-batch (sequences or samples); with --hook only recorded in "
                                    "the provenance (default: the script's DataLoader batch size)",
                                    optional(integer(1)))
    params: tuple[str, ...] | None = option(None, "with --hook or --script: parameters to record, comma-separated globs "
                                            "such as 'embedding.*' (default: every trainable parameter)",
                                            optional(globs))
    skip_params: tuple[str, ...] | None = option(None, "with --hook or --script: parameters not to record, "
                                                 "comma-separated globs such as '*.bias'", optional(globs))
    seed: int = option(0, "random seed (default 0)", integer(0))
    corpus: str | None = option(None, "plain-text corpus for the language models (default: installed KJV)",
                                optional(text("a corpus file")))
    output: str | None = option(None, "trace file to write (--hook: shard path with {rank})", optional(text("a path")),
                                flag="-o", aliases=("--output",), required=True, metavar="OUTPUT")
    force: bool = option(False, "replace -o (--hook: this rank's shard) if it exists", switch, switch=True)
    script_args: tuple[str, ...] = option((), "with --hook or --script: -- then the script's arguments", remainder,
                                          flag="script_args")

    def validate(self, place: Callable[[str], str], text: bool) -> None:
        """What each source takes, and -o (--hook: this rank's shard) new unless --force: before the capture,
        which may train long."""
        # --hook: this rank's shard (torchrun's RANK, else rank 0's)
        check_new_output(self.output.replace("{rank}", os.environ.get("RANK", "0")) if self.hook else self.output,
                         place("output"), self.force)
        if self.hook:
            self._unused(("ranks", "corpus"), "not used with --hook (the script decides)", place)
        elif self.script:
            if self.sparsifier not in (None, "natural"):
                raise ConfigError(f"{place('sparsifier')} {self.sparsifier}: --script records natural sparsity only "
                                  "(top-k and DGC would need every rank's residual; docs/capture.md)")
            if self.ranks is None:
                raise ConfigError(f"{place('ranks')}: required with --script (the virtual ranks N)")
            self._unused(("corpus", "density"), "not used with --script (the script decides; natural sparsity)",
                         place)
            if self.dense:
                raise ConfigError(f"{place('dense')}: not with --script")
        else:
            if self.script_args:
                raise ConfigError(f"{self.script_args[0]}: unexpected argument (script arguments go with --hook or "
                                  "--script)")
            self._unused(("params", "skip_params"), "only with --hook or --script (a workload records its own "
                         "parameters)", place)
            if self.ranks is None:
                raise ConfigError(f"{place('ranks')}: required with --workload")

    def _unused(self, names: tuple[str, ...], problem: str, place: Callable[[str], str]) -> None:
        """A one-line error for the first of `names` given."""
        for name in names:
            if getattr(self, name) is not None:
                raise ConfigError(f"{place(name)}: {problem}")

    def run(self) -> str:
        """Capture the trace (or, with --hook, this rank's shard); the line saying what was written."""
        if self.hook:
            return self._hooked()
        if self.script:
            from zensim.trace.capture.ranks import capture_script

            capture_script(self.script, list(self.script_args), self.output, self.ranks, self.iterations,
                           self.warmup, params=self.params, skip_params=self.skip_params or (), values=self.values,
                           value_dtype=self.value_dtype, batch_size=self.batch_size)
            return f"wrote {self.output}: {self.script}, {self.ranks} virtual ranks, {self.iterations} iterations"
        from zensim.trace.capture.run import capture
        from zensim.trace.capture.workloads import make_workload

        workload = make_workload(self.workload, self.batch_size, self.seed, self.corpus)
        capture(workload, self.output, self.ranks, self.iterations, self.warmup, self.sparsifier, self.density,
                self.values, dense=self.dense, value_dtype=self.value_dtype)
        return f"wrote {self.output}: {self.workload}, {self.ranks} workers, {self.iterations} iterations"

    def _hooked(self) -> str:
        """Run the user's script with the recording hook on its DDP model."""
        from zensim.trace.capture.hookrun import run_hooked
        from zensim.trace.capture.run import check_steps
        from zensim.trace.capture.sparsify import make_sparsifier

        kind = self.sparsifier or "natural"
        check_steps(self.iterations, self.warmup)  # before the script runs: it may take long to reach its DDP model
        make_sparsifier(kind, self.density, self.seed)
        try:
            recorder = run_hooked(self.hook, list(self.script_args), self.output, self.iterations,
                                  batch_size=self.batch_size, warmup=self.warmup, sparsifier=kind, density=self.density,
                                  values=self.values, seed=self.seed, dense=self.dense, value_dtype=self.value_dtype,
                                  workload=self.hook, params=self.params, skip_params=self.skip_params or ())
        except ValueError as exc:
            # torch's env:// rendezvous (init_process_group without torchrun's RANK, WORLD_SIZE, MASTER_ADDR, ...)
            if "env:// rendezvous" not in str(exc):
                raise
            missing = next((v for v in TORCHRUN_ENV if v not in os.environ), None)
            raise ConfigError(f"--hook {self.hook}: the script initializes torch.distributed from torchrun's "
                              f"environment, and {missing or 'part of it'} is not set: start it under torchrun "
                              f"(torchrun --nproc-per-node N $(which zensim) capture --hook {self.hook} ...; "
                              "docs/capture.md)") from None
        return f"rank {recorder.rank}: wrote {recorder.path}"
