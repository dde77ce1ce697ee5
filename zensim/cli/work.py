"""`zensim work`: the compression cost t(x) = alpha + beta x per kind of local work (measure, fit)."""

from __future__ import annotations

import argparse
import json
import sys

from zensim.errors import ConfigError
from zensim.report.table import format_table


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `work measure | fit`."""
    p = subparsers.add_parser("work", help="local-work (compression) cost: measure kernels, fit t(x) = alpha + beta x",
                              description="The cost of a scheme's local work per kind (hash, merge, encode, decode, "
                              "copy) as t(x) = alpha + beta x, in a calibration profile. See docs/iteration.md.")
    sub = p.add_subparsers(dest="work_command", required=True, metavar="ACTION")
    m = sub.add_parser("measure", help="time each kind's kernel at 2^10 .. 2^N elements")
    m.add_argument("--kernels", choices=("torch", "steps"), default="torch",
                   help="torch: a device kernel standing for each of hash, merge, encode, decode, copy (default); "
                   "steps: the code zensim's stage programs run for every work kind (wire formats, partitions; "
                   "CPU, numpy), what the emulator's ranks do (docs/validation.md)")
    m.add_argument("--device", default=None, help="torch device (--kernels torch: default cpu; --kernels steps: "
                   "the step code in torch on this device, default numpy on the host)")
    m.add_argument("--payloads", choices=("host", "device"), default="host",
                   help="--kernels steps: wire bytes made and read on the host (bytes objects, as gloo; default) "
                   "or on --device (uint8 tensors where the chunk lies, as NCCL)")
    m.add_argument("--max-log2", type=int, default=None, help="largest size 2^N (default 22, steps 21)")
    m.add_argument("--reps", type=int, default=10, help="timed repetitions per size (median; default 10)")
    m.add_argument("-o", "--output", required=True, help="measurements JSON to write")
    m.set_defaults(func=cmd_measure)
    f = sub.add_parser("fit", help="fit alpha, beta per kind to measurements: a calibration profile")
    f.add_argument("measurements", help="JSON written by `zensim work measure` (or benchmarks/device_profiles.py)")
    f.add_argument("--bandwidth-scale", type=float, default=1.0,
                   help="multiply every beta (another GPU: this memory bandwidth / that one's; default 1)")
    f.add_argument("--like", action="append", default=[], metavar="KIND=MEASURED",
                   help="price KIND as the measured kind (fixed and per-element costs, x1) and list it under the "
                   "profile's `scaled`: a kind the measurements could not price (repeatable)")
    f.add_argument("--fixed-from", default=None, metavar="KIND",
                   help="every kind's fixed cost per piece = KIND's (e.g. copy: one kernel launch and "
                   "synchronization), not each kind's own")
    f.add_argument("--source", default="", help="the profile's source text (default: says what was fitted)")
    f.add_argument("-o", "--output", required=True, help="calibration profile JSON to write (zensim-profile/1)")
    f.set_defaults(func=cmd_fit)


def cmd_measure(args: argparse.Namespace) -> int:
    """Measure on this machine."""
    from zensim.atomic import check_output, write_atomic
    from zensim.train.clocks import torch_device
    from zensim.train.cost import measure_work

    check_output(args.output, "-o")
    device = torch_device(args.device or "cpu") if args.kernels == "torch" or args.device else None
    top = args.max_log2 if args.max_log2 is not None else (21 if args.kernels == "steps" else 22)
    if not 10 <= top <= 30 or args.reps < 1:
        raise ConfigError(f"--max-log2 {top} / --reps {args.reps}: need 10 <= N <= 30 and reps >= 1")
    say = lambda line: print(line, file=sys.stderr)  # noqa: E731
    if args.payloads == "device" and (args.kernels != "steps" or device is None):
        raise ConfigError("--payloads device: needs --kernels steps and a --device")
    if args.kernels == "steps":
        from zensim.schemes.workbench import measure_steps
        measured = measure_steps(top, args.reps, progress=say, device=None if device is None else str(device),
                                 payloads=args.payloads)
    else:
        measured = measure_work(device, top, args.reps, progress=say)
    write_atomic(args.output, json.dumps(measured, indent=1) + "\n")
    print(f"wrote {args.output}: {measured['device']}")
    return 0


def cmd_fit(args: argparse.Namespace) -> int:
    """Fit and write the profile; print alpha, beta and the fit's worst relative error per kind."""
    from zensim.atomic import check_output, write_atomic
    from zensim.net.profile import parse_profile
    from zensim.net.profile import fit_error
    from zensim.train.cost import fixed_from, measured_points, priced_like, work_profile
    from zensim.train.layers import read_json

    check_output(args.output, "-o")
    if not args.bandwidth_scale > 0:
        raise ConfigError(f"--bandwidth-scale {args.bandwidth_scale}: must be positive")
    like = dict(pair.split("=", 1) for pair in args.like if "=" in pair)
    if len(like) != len(args.like):
        raise ConfigError(f"--like {next(p for p in args.like if '=' not in p)!r}: expected KIND=MEASURED")
    measured = read_json(args.measurements, "measurements")
    try:
        doc = work_profile(measured, args.bandwidth_scale, args.source)
        points = measured_points(measured)
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{args.measurements}: not work measurements ({exc})") from None
    try:
        doc = fixed_from(priced_like(doc, like), args.fixed_from) if args.fixed_from else priced_like(doc, like)
    except ValueError as exc:
        raise ConfigError(f"--like/--fixed-from: {exc}") from None
    parse_profile(doc, args.output, defaults=False)  # what --profile will read back
    write_atomic(args.output, json.dumps(doc, indent=1) + "\n")
    rows = [[k, doc["work_fixed_seconds"][k] * 1e6, doc["work_seconds_per_element"][k] * 1e9,
             fit_error(*points[k], doc["work_fixed_seconds"][k], doc["work_seconds_per_element"][k] / args.bandwidth_scale)]
            for k in points]
    print(f"wrote {args.output}: {doc['source']}")
    print(format_table(rows, ["kind", "alpha us", "beta ns/element", "worst rel. error (measured)"]))
    return 0
