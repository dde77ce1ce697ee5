"""The layer profile of a trace's model on a GPU preset: shipped beside the trace, else estimated.

    prof = device_layers("traces/deepfm-128w.zt", "v100")   # traces/layers/deepfm-b256.v100.layers.json
"""

from __future__ import annotations

import sys
from pathlib import Path

from zensim.trace.format import Trace, opened, trace_path
from zensim.train.devices import get_device
from zensim.train.layers import LayerProfile, load_layers


def device_layers(trace: str | Path | Trace, device: str, corpus: str | None = None,
                  what: str = "--device") -> LayerProfile:
    """The layer profile of the trace's (a path or an open Trace) workload and batch on GPU preset
    `device`: the shipped one beside the trace (layers/<workload>-b<batch>.<device>.layers.json), else
    a roofline estimate (one line on stderr says so). `what` names the option or key in errors."""
    dev = get_device(device, what)
    with opened(trace) as t:
        workload, batch = t.meta.get("workload"), t.meta.get("batch_size")
    shipped = Path(trace_path(trace)).parent / "layers" / f"{workload}-b{batch}.{dev.name}.layers.json"
    if shipped.is_file():
        return load_layers(shipped)
    from zensim.trace.capture.workloads import make_workload
    from zensim.train.roofline import estimate_workload  # torch: only when estimating

    print(f"zensim: estimating {workload} (batch {batch}) on {dev.label} (no {shipped})", file=sys.stderr)
    return estimate_workload(make_workload(workload, batch, 0, corpus), dev)
