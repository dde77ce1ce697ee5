"""`zensim emulate --script train.py -- ARGS`: any training script on n emulated ranks, as torchrun runs it.

Each rank is one process in its namespace (one machine with one GPU, or a CPU, per rank: node rank =
rank, local rank 0), started with the environment torchrun gives its workers (`torchrun_env`), so
an unmodified `init_process_group()` (env://) joins the others over the shaped links; gloo binds
the rank's interface (GLOO_SOCKET_IFNAME). `emulate.scriptrank` runs the script and stamps each
synchronizing forward of its DDP model; here the stamps become iteration times. Cleanup is the
cluster's (docs/emulation.md: nothing is left behind, whatever ends the run).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from emulate.launch import MASTER_PORT, launch, rank_env
from emulate.netns import LocalCluster, rank_addr
from zensim.ddp.hook import check_hook_arguments
from zensim.errors import ConfigError
from zensim.report.table import format_table
from zensim.request import at_least


def torchrun_env(rank: int, world: int, run_id: str) -> dict[str, str]:
    """The variables torchrun (torch.distributed.elastic's local agent) sets for a worker, for one
    worker per node: rank `rank` of `world`, node `rank` of `world`, local rank 0 of 1."""
    return {
        "RANK": str(rank), "LOCAL_RANK": "0", "WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": "1",
        "GROUP_RANK": str(rank), "GROUP_WORLD_SIZE": str(world), "ROLE_RANK": str(rank),
        "ROLE_WORLD_SIZE": str(world), "ROLE_NAME": "default", "MASTER_ADDR": rank_addr(0),
        "MASTER_PORT": str(MASTER_PORT), "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0",
        "TORCHELASTIC_RUN_ID": run_id, "TORCHELASTIC_USE_AGENT_STORE": "False",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
    }


def emulate_script(script: str, args: list[str], ranks: int, rate_bps: float, warmup: int = 1,
                   timeout: float = 900.0, wait_lock: float = 0.0, logs: Path | None = None,
                   hook: str | None = None) -> dict:
    """Run `script args` on `ranks` namespaces shaped to `rate_bps` per NIC; the iteration times.

    `warmup` first iterations are left out of the summary (DDP rebuilds its buckets after the first).
    `logs`: a folder that gets every rank's output (`rank{r}.log`). `hook`: a zensim scheme that
    synchronizes the script's DDP model (`zensim_hook(hook)` registered on it), None for its own.
    """
    if not Path(script).is_file():
        raise ConfigError(f"--script {script}: no such file")
    at_least("--warmup", warmup, 0)
    if hook is not None:
        try:
            check_hook_arguments(hook, None, None, None, {})
        except ConfigError as exc:
            raise ConfigError(f"--hook {hook}: {str(exc).removeprefix('zensim_hook: ')}") from None
    with LocalCluster(ranks, int(rate_bps), wait_lock=wait_lock) as cluster:
        run_id = cluster.run_dir.name

        def command(r: int, work: Path) -> list[str]:
            hooked = ["--hook", hook] if hook is not None else []
            return [sys.executable, "-m", "emulate.scriptrank", "--out", str(work / f"rank{r}.json"), *hooked,
                    script, *args]

        outs = launch(cluster, command, lambda r: {**rank_env(r), **torchrun_env(r, ranks, run_id)}, timeout,
                      desc=f"{Path(script).name} n={ranks}", logs=logs)
        describe = cluster.describe()
    return summarize_script(outs, warmup) | {"script": script, "args": args, "hook": hook or "default",
                                             "cluster": describe}


def summarize_script(outs: list[dict], warmup: int) -> dict:
    """Iteration times from the ranks' stamps: iteration i takes, on the slowest rank, from its stamp i
    to its stamp i + 1 (synchronous training: every rank's iteration ends with the same all-reduce);
    `cpu_s[i]`: the CPU seconds all ranks' processes spent meanwhile (their sum: what the shared host's
    cores gave the iteration)."""
    outs = sorted(outs, key=lambda o: o["rank"])
    counts = {len(o["stamps"]) for o in outs}
    if not all(o["ddp"] for o in outs):
        raise ConfigError("--script: the script built no DistributedDataParallel model (nothing to time)")
    if len(counts) != 1:
        raise ConfigError(f"--script: ranks ran different numbers of iterations ({sorted(counts)})")
    count = counts.pop()
    iterations = [max(o["stamps"][i + 1] - o["stamps"][i] for o in outs) for i in range(count - 1)]
    cpu = [sum(o["cpu_stamps"][i + 1] - o["cpu_stamps"][i] for o in outs) for i in range(count - 1)]
    timed = iterations[warmup:]
    return {
        "ranks": len(outs), "iterations": len(iterations), "warmup": warmup, "iteration_s": iterations,
        "median_s": statistics.median(timed) if timed else None, "min_s": min(timed, default=None),
        "max_s": max(timed, default=None), "cpu_s": cpu,
        "median_cpu_s": statistics.median(cpu[warmup:]) if timed else None, "script_s": max(o["end"] for o in outs) - min(o["start"] for o in outs),
        "wire_tx": [o.get("wire_tx") for o in outs], "wire_rx": [o.get("wire_rx") for o in outs],
        "hook_stats": [o.get("hook") for o in outs],
    }


def script_table(result: dict) -> str:
    """One-line table of an `emulate_script` result."""
    ms = (lambda v: None if v is None else v * 1e3)
    wire = [w for w in result["wire_tx"] if w is not None]
    row = [Path(result["script"]).name, result["ranks"], result["iterations"], result["warmup"],
           ms(result["median_s"]), ms(result["min_s"]), ms(result["max_s"]), result["script_s"],
           max(wire) if wire else None]
    return format_table([row], ["script", "ranks", "iterations", "warm-up", "median it ms", "min ms", "max ms",
                                "script s", "max wire tx B/rank"])
