"""The training iteration: per-layer profiles, gradient buckets, the overlap timeline, fusion strategies (`fusion/`).

    from zensim.train import LayerRecorder, load_layers, DDPBuckets
    recorder = LayerRecorder(model, optimizer)     # hooks: per-parameter forward/backward, ready order
    ...train...
    profile = recorder.profile(warmup=3, workload="mine", batch_size=32)
    buckets = DDPBuckets().assign(profile.params)  # DDP's buckets (25 MiB, first 1 MiB)

See docs/iteration.md. Names that need torch are imported on first use, so that the torch-free
parts (profiles, buckets) load without it.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "LayerProfile": "layers", "ParamTime": "layers", "load_layers": "layers", "parse_layers": "layers",
    "Bucket": "buckets", "DDPBuckets": "buckets", "BUCKETINGS": "buckets", "make_bucketing": "buckets",
    "DEVICES": "devices", "Device": "devices", "get_device": "devices",
    "LayerRecorder": "hooks", "record_workload": "record", "record_script": "record", "estimate_workload": "roofline",
    "shapes_profile": "shapes", "load_shapes_profile": "shapes",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
