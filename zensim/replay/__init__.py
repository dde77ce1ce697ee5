"""Replay over iterations: sparsifier + scheme pairs on dense gradients with per-rank state, timed."""

from zensim.replay.iterations import (ConservationError, ReplayIterationRecord, parse_range, replay_iterations,
                                      summarize)
from zensim.replay.method import DEFAULT_SPARSIFIER, ITERATION_SET, Method, StepResult, default_sparsifier, make_methods

__all__ = ["ConservationError", "ReplayIterationRecord", "parse_range", "replay_iterations", "summarize",
           "DEFAULT_SPARSIFIER", "ITERATION_SET", "Method", "StepResult", "default_sparsifier", "make_methods"]
