"""`zensim emulate`, `zensim calibrate`, `zensim validate`: the emulation testbed from the command line.
The requests and their work: emulate.request."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from emulate.request import CalibrateRequest, EmulateRequest, ValidateRequest
from zensim.cli import results
from zensim.request import add_arguments


def cmd_emulate(args: argparse.Namespace) -> int:
    """One-off emulation of one or all schemes plus the torch peers (records through the report path), or
    of a training script."""
    from zensim.report.provenance import provenance

    req = EmulateRequest.from_args(args)
    if req.script:
        from emulate.script import script_table

        result = req.run_script()
        print(json.dumps(result, indent=2) if args.json else script_table(result))
        return 0
    outs, paths = results.plan(args, inputs=[req.trace, req.raw])
    records = req.run(provenance(args.command_line))
    results.finish(args, records, outs, paths)
    return 0 if all(r.emulated.correct for r in records) else 1


def calibration_summary(out: str, profile: dict) -> str:
    """The one line `zensim calibrate` prints about the profile it wrote to `out`."""
    host = ", ".join(f"{k}: {e:.2f}" for k, e in profile["host_efficiency"].items())
    return (f"wrote {out}: {profile['nic_bandwidth'] * 8 / 1e6:.1f} Mbit/s per NIC x host efficiency by active "
            f"flows {{{host}}}, {profile['nic_latency'] * 1e6:.0f} us per message, CPU slowdown "
            f"{profile['cpu_slowdown']:.2f}; details in {Path(out).with_name(Path(out).stem + '.details.json')}")


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Measure an emulated cluster and write a zensim-profile/1 JSON."""
    req = CalibrateRequest.from_args(args)
    profile = req.run()
    print(json.dumps(profile, indent=2) if args.json else calibration_summary(req.out, profile))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Emulate and simulate every scheme, compare, write docs/validation.md and its plot."""
    from emulate.validate import tables

    result = ValidateRequest.from_args(args).run(args.command_line)
    print(json.dumps(result, indent=2) if args.json else tables(result))
    return 0


def register(sub) -> None:
    """Add emulate, calibrate and validate to the zensim parser."""
    p = sub.add_parser("emulate", help="run schemes (or your training script) for real: one rank per network "
                       "namespace, shaped links")
    add_arguments(p, EmulateRequest)
    results.add_options(p)
    p.set_defaults(func=cmd_emulate)

    p = sub.add_parser("calibrate", help="measure an emulated cluster's links and local work into a profile JSON")
    add_arguments(p, CalibrateRequest)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_calibrate)

    p = sub.add_parser("validate", help="emulate and simulate every scheme, compare, write validation.md and its plot")
    add_arguments(p, ValidateRequest)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_validate)
