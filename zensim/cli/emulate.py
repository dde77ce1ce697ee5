"""`zensim emulate`, `zensim calibrate`, `zensim validate`: the emulation testbed from the command line."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from zensim.atomic import check_output, write_atomic
from zensim.cli import results
from zensim.errors import ConfigError
from emulate.options import parse_options, parse_peers
from zensim.net.units import parse_bandwidth

ZEN = "zen"


def _rate_bps(text: str) -> float:
    """--nic in bit/s (the units of tc)."""
    return 8 * parse_bandwidth(text, "--nic")


def _schemes(text: str) -> list[str]:
    """--scheme(s): comma list or 'all', checked against the scheme layer's names."""
    from zensim.schemes import all_schemes, scheme_names

    known = scheme_names()
    names = all_schemes() if text == "all" else [s for s in text.split(",") if s]
    bad = [s for s in names if s not in known]
    if bad or not names:
        raise ConfigError(f"--scheme: unknown scheme(s) {', '.join(bad) or '(none)'} (known: all, {', '.join(known)})")
    return names


def _rates_bps(text: str) -> list[float]:
    """--nic of validate: a comma list of per-NIC bandwidths, in bit/s."""
    rates = [_rate_bps(x) for x in text.split(",") if x]
    if not rates:
        raise ConfigError(f"--nic: expected one or more bandwidths, got {text!r}")
    return rates


def _int_list(text: str, what: str, low: int, meaning: str) -> list[int]:
    """A comma list of integers, each at least `low`, or a ConfigError naming `what`."""
    try:
        values = [int(x) for x in text.split(",") if x]
    except ValueError:
        raise ConfigError(f"{what}: expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < low:
        raise ConfigError(f"{what}: {meaning}, got {text!r}")
    return values


def _iterations(text: str) -> list[int]:
    """--iteration of validate: a comma list of trace iterations."""
    return _int_list(text, "--iteration", 0, "expected non-negative trace iterations")


def _ranks(text: str) -> list[int]:
    """--ranks of validate: a comma list of cluster sizes, each at least 2."""
    return _int_list(text, "--ranks", 2, "every cluster needs at least 2 ranks")


def _read(path: str, what: str) -> str:
    """The text of an input file, or a ConfigError naming the argument and the file."""
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"{what}: cannot read {path} ({exc.strerror})") from None


def _at_least(value: float, low: float, what: str, strict: bool = False) -> None:
    """ConfigError naming `what` unless value >= low (> low with `strict`)."""
    if value < low or (strict and value == low):
        raise ConfigError(f"{what}: must be {'>' if strict else '>='} {low:g}, got {value:g}")


def _output_file(path: str, what: str) -> Path:
    """An output file name checked before any long run: not a directory, its directory exists."""
    return check_output(path, what)


def _output_dir(path: str, what: str) -> Path:
    """An output directory checked before any long run: absent (it is created) or a directory."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise ConfigError(f"{what}: {path} exists and is not a directory")
    return target


def _common_checks(args: argparse.Namespace) -> None:
    """Numbers every command takes: --timeout > 0, --wait >= 0, --iteration >= 0 (validate's list: _iterations)."""
    _at_least(args.timeout, 0, "--timeout", strict=True)
    _at_least(args.wait, 0, "--wait")
    if isinstance(args.iteration, int):
        _at_least(args.iteration, 0, "--iteration")


def cmd_emulate(args: argparse.Namespace) -> int:
    """One-off emulation of one or all schemes plus the torch peers (records through the report path), or
    of a training script."""
    from emulate.session import emulate_trace
    from emulate.summary import run_records
    from zensim.report.provenance import provenance, trace_info
    from zensim.trace import Trace

    _common_checks(args)
    script_args = args.script_args[1:] if args.script_args[:1] == ["--"] else args.script_args
    if args.script:
        return _emulate_script(args, script_args)
    if script_args:
        raise ConfigError(f"{script_args[0]}: unexpected argument (script arguments go with --script)")
    if args.hook is not None:
        raise ConfigError("--hook: only with --script (the hook a training script's DDP model trains with)")
    _at_least(args.repeats, 1, "--repeats")
    raw = _output_file(args.raw, "--raw") if args.raw else None
    outs, paths = results.plan(args, inputs=[args.trace, raw])
    peers = ",".join(parse_peers(args.peers)) or "none"
    summaries, ranks_out, cluster = emulate_trace(args.trace, args.ranks, _rate_bps(args.bandwidth),
                                                  _schemes(args.scheme), args.repeats, peers, args.iteration,
                                                  parse_options(args.options), args.timeout, args.wait)
    with Trace.open(args.trace) as trace:
        info = trace_info(trace, args.iteration)
    records = run_records(summaries, info, cluster, provenance(args.command_line))
    if raw is not None:
        write_atomic(raw, json.dumps(ranks_out))
    results.finish(args, records, outs, paths)
    return 0 if all(r.emulated.correct for r in records) else 1


def _emulate_script(args: argparse.Namespace, script_args: list[str]) -> int:
    """`zensim emulate --script`: the script on every rank, its iteration times."""
    from emulate.script import emulate_script, script_table

    logs = _output_dir(args.logs, "--logs") if args.logs else None
    if logs is not None:
        logs.mkdir(parents=True, exist_ok=True)
    result = emulate_script(args.script, script_args, args.ranks, _rate_bps(args.bandwidth), args.warmup,
                            args.timeout, args.wait, logs, args.hook)
    print(json.dumps(result, indent=2) if args.json else script_table(result))
    return 0


def calibration_summary(out: str, profile: dict) -> str:
    """The one line `zensim calibrate` prints about the profile it wrote to `out`."""
    host = ", ".join(f"{k}: {e:.2f}" for k, e in profile["host_efficiency"].items())
    return (f"wrote {out}: {profile['nic_bandwidth'] * 8 / 1e6:.1f} Mbit/s per NIC x host efficiency by active "
            f"flows {{{host}}}, {profile['nic_latency'] * 1e6:.0f} us per message, CPU slowdown "
            f"{profile['cpu_slowdown']:.2f}; details in {Path(out).with_name(Path(out).stem + '.details.json')}")


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Measure an emulated cluster and write a zensim-profile/1 JSON."""
    from emulate.session import calibrate_cluster

    _common_checks(args)
    out = _output_file(args.out, "--out")
    schemes = _schemes(args.schemes) if args.trace else []
    profile = calibrate_cluster(args.ranks, _rate_bps(args.bandwidth), out, args.trace, schemes,
                                args.iteration, parse_options(args.options), args.timeout, args.wait)
    if args.json:
        print(json.dumps(profile, indent=2))
    else:
        print(calibration_summary(args.out, profile))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Emulate and simulate every scheme, compare, write docs/validation.md and its plot."""
    from emulate.validate import merge, tables, validate
    from emulate.valreport import write_docs
    from zensim.trace import Trace

    if not args.trace and not args.from_json:
        raise ConfigError("--trace: required (or --from-json to re-render an earlier validation)")
    _common_checks(args)
    _at_least(args.repeats, 1, "--repeats")
    _at_least(args.step_repeats, 1, "--step-repeats")
    notes = _read(args.notes, "--notes") if args.notes else ""
    # the page goes into --workdir unless --docs names a folder ('' for none): by default a run never
    # writes into the repository's docs/ (which holds the project's own validation page)
    docs = _output_dir(*((args.workdir, "--workdir") if args.docs is None else (args.docs, "--docs"))) if args.docs != "" else None
    if args.from_json:
        results = [_validation_json(path) for path in args.from_json.split(",") if path]
        result = merge(results) if len(results) > 1 else results[0]
        command = result.get("command", "zensim validate")
    else:
        trace = Trace.open(args.trace)
        calib = args.calibration_iteration
        if calib is None:
            calib = 1 if trace.iterations > 1 else 0
        workdir = _output_dir(args.workdir, "--workdir")
        iterations = _iterations(args.iteration)
        bad = [i for i in iterations if i >= trace.iterations]
        if bad:
            raise ConfigError(f"--iteration: {bad[0]} out of range for {args.trace} ({trace.iterations} iterations)")
        result = validate(args.trace, _ranks(args.ranks), _rates_bps(args.bandwidth), _schemes(args.schemes),
                          args.repeats, iterations, calib,
                          parse_options(args.options), workdir, args.wait, args.step_repeats)
        command = result["command"] = args.command_line
        write_atomic(workdir / "validation.json", json.dumps(result, indent=2) + "\n")
    if docs is not None:
        write_docs(result, docs, command, ZEN, args.name, notes)
    print(json.dumps(result, indent=2) if args.json else tables(result))
    return 0


def _validation_json(path: str) -> dict:
    """An earlier validation.json (--from-json; an older one-bandwidth result is upgraded), or a
    ConfigError naming the file."""
    from emulate.validate import upgrade

    try:
        result = json.loads(_read(path, "--from-json"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--from-json: {path} is not JSON ({exc.msg})") from None
    missing = [k for k in ("rows", "summary", "imbalance", "profiles") if not isinstance(result, dict) or k not in result]
    if not missing and "rates_bps" not in result and "rate_bps" not in result:
        missing = ["rates_bps"]
    if missing:
        raise ConfigError(f"--from-json: {path} is not a validation result (no {', '.join(missing)})")
    return upgrade(result)


def _common(p: argparse.ArgumentParser, json: bool = True, iterations: bool = False) -> None:
    p.add_argument("--bandwidth", default="200mbit", help="per-NIC bandwidth, each direction (default 200mbit)")
    if iterations:  # validate: a comma list
        p.add_argument("--iteration", default="0", help="trace iteration(s) to validate, a comma list (default 0); "
                       "with a comma list of --nic values, every bandwidth x size x iteration is run")
    else:
        p.add_argument("--iteration", type=int, default=0, help="trace iteration (default 0)")
    p.add_argument("--options", default="{}", help="scheme options as JSON, e.g. '{\"pull\": \"hash_bitmap\"}'")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds before the run is abandoned")
    p.add_argument("--wait", type=float, default=0.0, help="seconds to wait for another emulation to finish")
    if json:
        p.add_argument("--json", action="store_true", help="machine-readable output")


def register(sub) -> None:
    """Add emulate, calibrate and validate to the zensim parser."""
    p = sub.add_parser("emulate", help="run schemes (or your training script) for real: one rank per network "
                       "namespace, shaped links")
    p.add_argument("--ranks", type=int, required=True)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--trace", help="trace whose iteration the schemes synchronize")
    what.add_argument("--script", help="a training script to run on every rank as torchrun would (arguments "
                      "after --); reports its iteration times (docs/emulation.md)")
    p.add_argument("--warmup", type=int, default=1, help="with --script: first iterations left out of the "
                   "summary (default %(default)s)")
    p.add_argument("--logs", default=None, help="with --script: folder for every rank's output (rank<r>.log)")
    p.add_argument("--hook", default=None, help="with --script: synchronize its DDP model with zensim_hook(HOOK), "
                   "a zensim scheme (default: the script's own hook, DDP's all-reduce unless it registers one)")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="with --script: -- then the script's arguments")
    p.add_argument("--scheme", default=ZEN, help="scheme name, comma list, or all (default %(default)s)")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--peers", default="dense,sparse", help="torch peers measured alongside: dense,sparse or none")
    p.add_argument("--raw", default=None, help="also write every rank's raw JSON output here")
    _common(p, json=False)
    results.add_options(p)
    p.set_defaults(func=cmd_emulate)

    p = sub.add_parser("calibrate", help="measure an emulated cluster's links and local work into a profile JSON")
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--out", required=True, help="profile JSON to write (zensim-profile/1)")
    p.add_argument("--trace", default=None, help="trace whose scheme runs calibrate local work (else links only)")
    p.add_argument("--schemes", default="all")
    _common(p)
    p.set_defaults(func=cmd_calibrate)

    p = sub.add_parser("validate", help="emulate and simulate every scheme, compare, write validation.md and its plot")
    p.add_argument("--trace", default=None, help="trace to validate on (required unless --from-json)")
    p.add_argument("--ranks", default="4,8,16", help="cluster sizes (default %(default)s)")
    p.add_argument("--from-json", default=None, help="re-render the docs from an earlier validation.json, no runs; a comma list of "
                   "them (runs of the same trace, e.g. one per bandwidth) renders them as one")
    p.add_argument("--notes", default=None, help="markdown file appended to the generated page (analysis)")
    p.add_argument("--schemes", default="all")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--step-repeats", type=int, default=3,
                   help="timed in-process runs per scheme whose median is the measured local work (default 3)")
    p.add_argument("--calibration-iteration", type=int, default=None,
                   help="trace iteration for the local-work calibration (default 1 if present, else 0)")
    p.add_argument("--workdir", default="validation-out", help="profiles and validation.json go here")
    p.add_argument("--docs", default=None,
                   help="folder for validation.md and validation.png (default: the --workdir; '' for none)")
    p.add_argument("--name", default="validation", help="base name of the markdown and PNG (default %(default)s)")
    _common(p, iterations=True)
    p.set_defaults(func=cmd_validate)
