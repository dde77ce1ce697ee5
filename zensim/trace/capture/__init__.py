"""Capture gradient-index traces from PyTorch training: a DDP hook, virtual workers, workloads.

    from zensim.trace.capture import record_ddp          # in a user's DDP script
    record_ddp(ddp_model, "shard-{rank}.zt", iterations=5, warmup=100)

or `zensim capture --workload lstm-lm --ranks 128 --iterations 3 -o t.zt` (virtual workers).
Names are imported on first use, so that the torch-free CLI module loads without torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "DDPRecorder": "hook", "record_ddp": "hook", "capture": "run", "VirtualWorkers": "virtual",
    "Sparsifier": "sparsify", "Sparsified": "sparsify", "Selection": "sparsify",
    "make_sparsifier": "sparsify",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
