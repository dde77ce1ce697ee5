"""The emulator's typed requests: `zensim emulate` (a trace's schemes, or a training script), `zensim
calibrate` and `zensim validate`. One field per flag (zensim.request's mapping: flag, help, default,
check); the rules between fields are each request's `validate`; its `run()` does the work (emulate.session,
emulate.script, emulate.validate) and returns what the command prints or writes.

Values given as text stay text in the request (--nic 200mbit, --scheme zen,sparcml, --options
JSON), checked when the request is made; the properties give them parsed (rate_bps, schemes, ...)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from emulate.options import parse_options, parse_peers
from zensim.atomic import check_output, write_atomic
from zensim.errors import ConfigError
from zensim.net.units import parse_bandwidth
from zensim.request import Check, Request, Where, integer, number, option, optional, parsed, remainder, text


def bandwidth(value: Any, where: Where) -> str:
    """A per-NIC bandwidth with its unit ('200mbit'), kept as given."""
    parse_bandwidth(value, where.name)
    return value


def bandwidths(value: Any, where: Where) -> str:
    """A comma list of per-NIC bandwidths ('25mbit,200mbit'), kept as given."""
    rates = [parse_bandwidth(x, where.name) for x in str(value).split(",") if x]
    if not rates:
        raise ConfigError(f"{where.name}: expected one or more bandwidths, got {value!r}")
    return value


ZEN = "zen"  # the scheme the validation page is about


def scheme_list(text: str, name: str = "--scheme") -> list[str]:
    """A comma list of scheme names or 'all' (the scheme layer's names), checked."""
    from zensim.schemes import all_schemes, scheme_names

    known = scheme_names()
    names = all_schemes() if text == "all" else [s for s in text.split(",") if s]
    bad = [s for s in names if s not in known]
    if bad or not names:
        raise ConfigError(f"{name}: unknown scheme(s) {', '.join(bad) or '(none)'} (known: all, {', '.join(known)})")
    return names


def schemes(value: Any, where: Where) -> str:
    """Scheme names, a comma list or all, kept as given."""
    scheme_list(value, where.name)
    return value


def integers(low: int, meaning: str) -> Check:
    """A comma list of integers each >= low ('4,8,16'), kept as given; `meaning` says why not below."""
    def check(value: Any, where: Where) -> str:
        try:
            values = ints(value)
        except ValueError:
            raise ConfigError(f"{where.name}: expected comma-separated integers, got {value!r}") from None
        if not values or min(values) < low:
            raise ConfigError(f"{where.name}: {meaning}, got {value!r}")
        return value
    return check


def ints(value: str) -> list[int]:
    """The integers of a comma list ('4,8,16')."""
    return [int(x) for x in value.split(",") if x]


def peers(value: Any, where: Where) -> str:
    """The torch peers measured alongside (emulate.options.parse_peers), kept as given."""
    parse_peers(value)
    return value


def scheme_options(value: Any, where: Where) -> str:
    """Scheme options as a JSON object (emulate.options.parse_options), kept as given."""
    parse_options(value)
    return value


def output_file(value: Any, where: Where) -> str:
    """An output file checked before any long run: not a directory, its directory exists."""
    check_output(value, where.name)
    return value


def output_dir(value: Any, where: Where) -> str:
    """An output folder checked before any long run: absent (it is created) or a folder; '' is none."""
    if value and Path(value).exists() and not Path(value).is_dir():
        raise ConfigError(f"{where.name}: {value} exists and is not a directory")
    return value


def read(path: str, what: str) -> str:
    """The text of an input file, or a ConfigError naming the argument and the file."""
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"{what}: cannot read {path} ({exc.strerror})") from None


@dataclass(frozen=True)
class EmulationRequest(Request):
    """What every emulation command takes: the links' bandwidth, the trace iteration, the schemes'
    options, the run's timeout and the wait for another emulation."""

    nic: str = option("200mbit", "per-NIC bandwidth, each direction (default 200mbit)", bandwidth)
    iteration: int = option(0, "trace iteration (default 0)", integer(0))
    options: str = option("{}", "scheme options as JSON, e.g. '{\"pull\": \"hash_bitmap\"}'", scheme_options,
                          metavar="JSON")
    timeout: float = option(900.0, "seconds before the run is abandoned (default 900)", number(0, open_low=True))
    wait: float = option(0.0, "seconds to wait for another emulation to finish (default 0)", number(0))

    @property
    def rate_bps(self) -> float:
        """--nic in bit/s (the units of tc)."""
        return 8 * parse_bandwidth(self.nic, "--nic")

    @property
    def scheme_options(self) -> dict:
        """--options as a dict."""
        return parse_options(self.options)


@dataclass(frozen=True)
class EmulateRequest(EmulationRequest):
    """`zensim emulate`: a trace's schemes and the torch peers on shaped namespaces (records through the
    report path), or a training script on every rank (its iteration times)."""

    ranks: int | None = option(None, "ranks, one per network namespace", optional(parsed(int)), required=True)
    trace: str | None = option(None, "trace whose iteration the schemes synchronize", optional(text("a trace")),
                               one_of="what")
    script: str | None = option(None, "a training script to run on every rank as torchrun would (arguments after "
                                "--); reports its iteration times (docs/emulation.md)", optional(text("a script")),
                                one_of="what")
    warmup: int = option(1, "with --script: first iterations left out of the summary (default 1)", parsed(int))
    logs: str | None = option(None, "with --script: folder for every rank's output (rank<r>.log)", optional(output_dir))
    hook: str | None = option(None, "with --script: synchronize its DDP model with zensim_hook(HOOK), a zensim scheme "
                              "(default: the script's own hook, DDP's all-reduce unless it registers one)",
                              optional(text("a scheme")))
    script_args: tuple[str, ...] = option((), "with --script: -- then the script's arguments", remainder,
                                          flag="script_args")
    scheme: str = option("zen", "scheme name, comma list, or all (default zen)", schemes)
    repeats: int = option(1, "timed runs of every scheme (default 1)", integer(1))
    peers: str = option("dense,sparse", "torch peers measured alongside: dense,sparse or none", peers)
    raw: str | None = option(None, "also write every rank's raw JSON output here", optional(output_file))

    def validate(self, place: Callable[[str], str], text: bool) -> None:
        """Script arguments and --hook go with --script."""
        if self.script:
            return
        if self.script_args:
            raise ConfigError(f"{self.script_args[0]}: unexpected argument (script arguments go with --script)")
        if self.hook is not None:
            raise ConfigError(f"{place('hook')}: only with --script (the hook a training script's DDP model trains "
                              "with)")

    def run(self, provenance: dict) -> list:
        """Emulate the trace's schemes and peers: the RunRecords (the raw rank outputs written to --raw)."""
        from emulate.session import emulate_trace
        from emulate.summary import run_records
        from zensim.report.provenance import trace_info
        from zensim.trace import Trace

        summaries, ranks_out, cluster = emulate_trace(self.trace, self.ranks, self.rate_bps, scheme_list(self.scheme),
                                                      self.repeats, ",".join(parse_peers(self.peers)) or "none",
                                                      self.iteration, self.scheme_options, self.timeout, self.wait)
        with Trace.open(self.trace) as trace:
            info = trace_info(trace, self.iteration)
        if self.raw is not None:
            write_atomic(self.raw, json.dumps(ranks_out))
        return run_records(summaries, info, cluster, provenance)

    def run_script(self) -> dict:
        """Run the script on every rank: its iteration times (emulate.script.emulate_script)."""
        from emulate.script import emulate_script

        logs = Path(self.logs) if self.logs else None
        if logs is not None:
            logs.mkdir(parents=True, exist_ok=True)
        return emulate_script(self.script, list(self.script_args), self.ranks, self.rate_bps, self.warmup,
                              self.timeout, self.wait, logs, self.hook)


@dataclass(frozen=True)
class CalibrateRequest(EmulationRequest):
    """`zensim calibrate`: an emulated cluster's links (and with a trace its schemes' local work) measured
    into a zensim-profile/1 JSON."""

    ranks: int | None = option(None, "ranks, one per network namespace", optional(parsed(int)), required=True)
    out: str | None = option(None, "profile JSON to write (zensim-profile/1)", optional(output_file), required=True)
    trace: str | None = option(None, "trace whose scheme runs calibrate local work (else links only)",
                               optional(text("a trace")))
    scheme: str = option("all", "schemes whose runs calibrate local work, a comma list or all (default all)", schemes)

    def run(self) -> dict:
        """Measure and write the profile; the profile."""
        from emulate.session import calibrate_cluster

        return calibrate_cluster(self.ranks, self.rate_bps, Path(self.out), self.trace,
                                 scheme_list(self.scheme) if self.trace else [], self.iteration, self.scheme_options,
                                 self.timeout, self.wait)


@dataclass(frozen=True)
class ValidateRequest(EmulationRequest):
    """`zensim validate`: every scheme emulated and simulated per bandwidth, cluster size and iteration,
    compared; or earlier results re-rendered (--from-json). The page goes into --workdir unless --docs
    names a folder ('' for none): by default a run never writes into the repository's docs/ (which holds
    the project's own validation page)."""

    nic: str = option("200mbit", "per-NIC bandwidth, each direction, or a comma list of them (default 200mbit)",
                      bandwidths)
    iteration: str = option("0", "trace iteration(s) to validate, a comma list (default 0); with a comma list of --nic "
                            "values, every bandwidth x size x iteration is run",
                            integers(0, "expected non-negative trace iterations"))
    trace: str | None = option(None, "trace to validate on (required unless --from-json)", optional(text("a trace")))
    ranks: str = option("4,8,16", "cluster sizes (default 4,8,16)",
                        integers(2, "every cluster needs at least 2 ranks"))
    from_json: str | None = option(None, "re-render the docs from an earlier validation.json, no runs; a comma list of "
                                   "them (runs of the same trace, e.g. one per bandwidth) renders them as one",
                                   optional(text("validation.json files")))
    notes: str | None = option(None, "markdown file appended to the generated page (analysis)",
                               optional(text("a markdown file")))
    scheme: str = option("all", "schemes, a comma list or all (default all)", schemes)
    repeats: int = option(3, "emulated runs of every scheme (default 3)", integer(1))
    step_repeats: int = option(3, "timed in-process runs per scheme whose median is the measured local work "
                               "(default 3)", integer(1))
    calibration_iteration: int | None = option(None, "trace iteration for the local-work calibration (default 1 if "
                                               "present, else 0)", optional(parsed(int)))
    workdir: str = option("validation-out", "profiles and validation.json go here", output_dir)
    docs: str | None = option(None, "folder for validation.md and validation.png (default: the --workdir; '' for "
                              "none)", optional(output_dir))
    name: str = option("validation", "base name of the markdown and PNG (default validation)", text("a name"))

    def validate(self, place: Callable[[str], str], text: bool) -> None:
        """A trace, or earlier results to re-render."""
        if not self.trace and not self.from_json:
            raise ConfigError(f"{place('trace')}: required (or {place('from_json')} to re-render an earlier "
                              "validation)")

    def run(self, command_line: str) -> dict:
        """Validate (or re-render --from-json), write validation.json and the page; the result."""
        from emulate.validate import merge, validate
        from emulate.valreport import write_docs
        from zensim.trace import Trace

        notes = read(self.notes, "--notes") if self.notes else ""
        docs = Path(self.workdir if self.docs is None else self.docs) if self.docs != "" else None
        if self.from_json:
            results = [validation_json(path) for path in self.from_json.split(",") if path]
            result = merge(results) if len(results) > 1 else results[0]
            command = result.get("command", "zensim validate")
        else:
            trace = Trace.open(self.trace)
            calib = self.calibration_iteration
            if calib is None:
                calib = 1 if trace.iterations > 1 else 0
            iterations = ints(self.iteration)
            bad = [i for i in iterations if i >= trace.iterations]
            if bad:
                raise ConfigError(f"{self.place('iteration')}: {bad[0]} out of range for {self.trace} ({trace.iterations} iterations)")
            workdir = Path(self.workdir)
            result = validate(self.trace, ints(self.ranks),
                              [8 * parse_bandwidth(x, "--nic") for x in self.nic.split(",") if x],
                              scheme_list(self.scheme), self.repeats, iterations, calib, self.scheme_options,
                              workdir, self.wait, self.step_repeats)
            command = result["command"] = command_line
            write_atomic(workdir / "validation.json", json.dumps(result, indent=2) + "\n")
        if docs is not None:
            write_docs(result, docs, command, ZEN, self.name, notes)
        return result


def validation_json(path: str) -> dict:
    """An earlier validation.json (--from-json; an older one-bandwidth result is upgraded), or a
    ConfigError naming the file."""
    from emulate.validate import upgrade

    try:
        result = json.loads(read(path, "--from-json"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--from-json: {path} is not JSON ({exc.msg})") from None
    missing = [k for k in ("rows", "summary", "imbalance", "profiles") if not isinstance(result, dict) or k not in result]
    if not missing and "rates_bps" not in result and "rate_bps" not in result:
        missing = ["rates_bps"]
    if missing:
        raise ConfigError(f"--from-json: {path} is not a validation result (no {', '.join(missing)})")
    return upgrade(result)
