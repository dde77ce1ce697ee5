"""Glue: trace x scheme x cluster -> result records (`simulate`), the multi-GPU layouts, the CLI."""

from zensim.net.topology import ClusterSpec
from zensim.report.record import RunRecord
from zensim.sim.run import simulate

__all__ = ["ClusterSpec", "RunRecord", "simulate"]
