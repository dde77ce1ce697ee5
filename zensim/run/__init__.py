"""Running stage programs: the one rank-step loop, its transports, meter, context, log and checks.

    from zensim.run import run_ranks, InMemory, InBytes
    out = run_ranks(program, chunks)                 # all ranks here, objects; checks the dense sum
    out.results[r], out.log (columnar MessageLog), out.context (meter, discarded, flushed, stats)
    run_ranks(program, chunks, InBytes(), timed=True)  # every payload through bytes, steps timed

The torch.distributed transport (one rank per process) is `zensim.run.torchdist.TorchP2P`.
"""

from zensim.run.check import AggregationMismatch, Expected, check_results, expected_sum, result_problem
from zensim.run.context import Meter, RunContext, Tables
from zensim.run.driver import RunOutput, run_ranks
from zensim.run.log import PHASES, LogBuilder, Message, MessageLog, Work
from zensim.run.transports import InBytes, InMemory, Transport

__all__ = [
    "AggregationMismatch", "Expected", "check_results", "expected_sum", "result_problem", "Meter", "RunContext", "Tables",
    "RunOutput", "run_ranks", "PHASES", "LogBuilder", "Message", "MessageLog", "Work", "InBytes", "InMemory",
    "Transport",
]
