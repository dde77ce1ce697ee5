"""Capture gradient-index traces from PyTorch training: a DDP hook, virtual workers, workloads.

    from zensim.trace.capture import record_ddp          # in a user's DDP script
    record_ddp(ddp_model, "shard-{rank}.zt", iterations=5, warmup=100)

or `zensim capture --workload lstm-lm --workers 128 --iterations 3 -o t.zt` (virtual workers).
"""

from zensim.trace.capture.hook import DDPRecorder, record_ddp
from zensim.trace.capture.run import capture
from zensim.trace.capture.sparsify import DGC, Selection, Sparsifier, TopK, make_sparsifier
from zensim.trace.capture.virtual import VirtualWorkers

__all__ = [
    "DDPRecorder", "record_ddp", "capture", "VirtualWorkers",
    "Sparsifier", "TopK", "DGC", "Selection", "make_sparsifier",
]
