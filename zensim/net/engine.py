"""Replay a MessageLog on a Topology with simpy: the timing semantics of docs/architecture.md.

Rank r's stage s starts when its stage s-1 ended; it does its `pre` work, injects its stage-s sends
(in rotated order dst = src+1, src+2, ... so that an all-to-all has no hot spot in `fifo`), waits for
all its stage-s messages to arrive and its own stage-s sends to be delivered, then does its `post`
work; that ends stage s. No global barrier. Zero-byte messages cost their route's latency.

Optional properties of a testbed (calibration profile): `nic_efficiency` scales a NIC link's
bandwidth by eff(k) of the k flows it carries (zensim.net.profile.NicEfficiency; each model counts k
its own way); `host_efficiency` scales every NIC by h(f) of the f flows active in the whole network
(an emulator runs all NICs on one host); `host_cores` makes the local work of all ranks of one host
share that many processors (zensim.net.cores.SharedCores) instead of one processor per rank.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import simpy

from zensim.errors import ConfigError
from zensim.net.cores import SharedCores
from zensim.net.fifo import FifoNetwork
from zensim.net.maxmin import MaxMinNetwork
from zensim.net.profile import WORK_KINDS, NicEfficiency, WorkCost
from zensim.net.topology import Topology
from zensim.schemes.log import PHASES, MessageLog

MODELS = ("fifo", "maxmin")


@dataclass
class Timing:
    """When everything happened (seconds): per rank x stage, per message, per link."""

    stage_start: np.ndarray  # (n, S)
    stage_end: np.ndarray  # (n, S)
    msg_start: np.ndarray  # injection time per message (log order)
    msg_end: np.ndarray  # delivery time per message
    link_bytes: np.ndarray  # bytes carried per link
    events: int

    @property
    def makespan(self) -> float:
        """Time at which the last rank finished its last stage."""
        return float(self.stage_end[:, -1].max()) if self.stage_end.size else 0.0


def work_seconds(log: MessageLog, cost: WorkCost | None) -> tuple[np.ndarray, np.ndarray]:
    """Pre and post local-work seconds per (rank, stage) under `cost`; `cost` None = the seconds the
    log measured (ValueError if it has none)."""
    if cost is None:
        if log.measured is None:
            raise ValueError("this message log has no measured local work (make it with emulate.stepcost)")
        return log.measured[:, :, 0], log.measured[:, :, 1]
    pre, post = (np.zeros((log.n, log.num_stages)) for _ in PHASES)
    if not log.work:
        return pre, post
    kind_index = {k: i for i, k in enumerate(WORK_KINDS)}
    try:
        cols = np.array([(w.stage, w.rank, PHASES.index(w.phase), kind_index[w.kind], w.elements) for w in log.work],
                        dtype=np.int64)
    except (KeyError, ValueError) as exc:
        raise ValueError(f"message log has unknown work phase or kind: {exc}") from None
    seconds = cols[:, 4] * cost.vector()[cols[:, 3]]
    for phase, out in enumerate((pre, post)):
        sel = cols[:, 2] == phase
        np.add.at(out, (cols[sel, 1], cols[sel, 0]), seconds[sel])
    return pre, post


def link_efficiency(topology: Topology, eff: NicEfficiency | None, kmax: int) -> list[list[float] | None]:
    """Per link: eff(0..kmax) for NIC links when `eff` is given, None where the bandwidth is fixed."""
    if eff is None:
        return [None] * topology.num_links
    table = eff.table(kmax)
    return [table if name.startswith("nic-") else None for name in topology.names]


def replay(log: MessageLog, topology: Topology, gpu_of_rank: np.ndarray | None = None, model: str = "fifo",
           work: WorkCost | None = None, maxmin_batch: float = 1 / 64, nic_efficiency: NicEfficiency | None = None,
           host_cores: int | None = None, host_of_rank: np.ndarray | None = None,
           measured_work: float | None = None, host_efficiency: NicEfficiency | None = None) -> Timing:
    """Time `log` on `topology` with rank r placed on GPU `gpu_of_rank[r]` (identity by default).

    Local work: `work` costs per element (default WorkCost()), or with `measured_work` = f the seconds
    the log measured per step (MessageLog.measured) times f. `host_efficiency`: NIC bandwidth by the
    number of flows active at once in the whole network (all NICs emulated on one host).

    `host_cores`: the local work of the ranks of one host shares that many processors; hosts are
    `host_of_rank` (default: the machine of the rank's GPU). `nic_efficiency`: NIC bandwidth by flows.
    """
    if model not in MODELS:
        raise ValueError(f"unknown sharing model {model!r}")
    if not 0 <= maxmin_batch <= 1:
        raise ConfigError(f"--maxmin-batch {maxmin_batch}: must be in [0, 1]")
    if host_cores is not None and (isinstance(host_cores, bool) or not isinstance(host_cores, int) or host_cores < 1):
        raise ConfigError(f"host_cores: must be a positive integer, got {host_cores!r}")
    n, stages = log.n, log.num_stages
    gpu = np.arange(n) if gpu_of_rank is None else np.asarray(gpu_of_rank, dtype=np.int64)
    cols = log.arrays()
    stage, src, dst, nbytes = cols["stage"], cols["src"], cols["dst"], cols["nbytes"]
    routes = topology.route_matrix(gpu[src], gpu[dst])
    if measured_work is None:
        pre, post = work_seconds(log, work if work is not None else WorkCost())
    else:
        pre, post = (measured_work * x for x in work_seconds(log, None))

    # sends of (rank, stage) as slices of one ordering; pending = messages a (rank, stage) waits for
    order = np.lexsort(((dst - src) % max(n, 1), stage, src))
    key = src[order] * stages + stage[order]
    bounds = np.searchsorted(key, np.arange(n * stages + 1))
    pending = (np.bincount(src * stages + stage, minlength=n * stages)
               + np.bincount(dst * stages + stage, minlength=n * stages)).tolist()
    order_list, bounds_list = order.tolist(), bounds.tolist()
    stage_list, src_list, dst_list = stage.tolist(), src.tolist(), dst.tolist()
    pre_list, post_list = pre.ravel().tolist(), post.ravel().tolist()

    env = simpy.Environment()
    stage_start = np.zeros((n, stages))
    stage_end = np.zeros((n, stages))
    msg_start = np.zeros(len(nbytes))
    msg_end = np.zeros(len(nbytes))
    sent = [False] * (n * stages)
    counter = [0]
    if host_cores is None:
        pools = []
    else:
        host = gpu // topology.spec.gpus_per_machine if host_of_rank is None else np.asarray(host_of_rank)
        hosts, host_index = np.unique(host, return_inverse=True)
        pools = [SharedCores(env, host_cores) for _ in hosts]
        pool_of_rank = [pools[h] for h in host_index.tolist()]

    def later(delay: float, fn, *args) -> None:
        counter[0] += 1
        env.timeout(delay).callbacks.append(lambda _ev: fn(*args))

    def compute(r: int, delay: float, fn, *args) -> None:
        """Local work of rank r for `delay` seconds of one processor, then fn(*args)."""
        if pools:
            pool_of_rank[r].run(delay, fn, *args)
        else:
            later(delay, fn, *args)

    def begin(r: int, s: int) -> None:
        stage_start[r, s] = env.now
        delay = pre_list[r * stages + s]
        if delay > 0:
            compute(r, delay, send, r, s)
        else:
            send(r, s)

    def send(r: int, s: int) -> None:
        ids = order_list[bounds_list[r * stages + s]: bounds_list[r * stages + s + 1]]
        sent[r * stages + s] = True
        if ids:
            msg_start[ids] = env.now
            network.inject(ids)
        if pending[r * stages + s] == 0:
            finish(r, s)

    def delivered(m: int) -> None:
        msg_end[m] = env.now
        for r in (src_list[m], dst_list[m]):
            slot = r * stages + stage_list[m]
            pending[slot] -= 1
            if pending[slot] == 0 and sent[slot]:
                finish(r, stage_list[m])

    def finish(r: int, s: int) -> None:
        delay = post_list[r * stages + s]
        if delay > 0:
            compute(r, delay, end, r, s)
        else:
            end(r, s)

    def end(r: int, s: int) -> None:
        stage_end[r, s] = env.now
        if s + 1 < stages:
            begin(r, s + 1)

    efficiency = link_efficiency(topology, nic_efficiency, len(nbytes))
    nics = [k for k, name in enumerate(topology.names) if name.startswith("nic-")]
    host = host_efficiency.table(min(len(nbytes), host_efficiency.points[-1][0])) if host_efficiency is not None else None
    if model == "fifo":
        route_tuples = [tuple(int(k) for k in row if k != topology.num_links) for row in routes]
        network = FifoNetwork(env, topology.capacity, topology.latency, route_tuples, nbytes, delivered, efficiency,
                              host, nics)
    else:
        network = MaxMinNetwork(env, topology.capacity, topology.latency, routes, nbytes, delivered, maxmin_batch,
                                efficiency, host, nics)
    if stages:
        for r in range(n):
            begin(r, 0)
    env.run()
    link_bytes = np.bincount(routes.ravel(), weights=np.repeat(nbytes, routes.shape[1]).astype(np.float64),
                             minlength=topology.num_links + 1)[: topology.num_links]
    events = counter[0] + network.events + sum(pool.events for pool in pools)
    return Timing(stage_start, stage_end, msg_start, msg_end, link_bytes, events)
