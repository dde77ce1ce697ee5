"""Glue: trace x scheme x cluster -> result records (`simulate`), the multi-GPU layouts, the CLI."""

from zensim.net.topology import ClusterSpec
from zensim.sim.run import SimRecord, simulate

__all__ = ["ClusterSpec", "SimRecord", "simulate"]
