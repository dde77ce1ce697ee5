"""One simulated training iteration (zensim.train.timeline) as Chakra execution traces, one file per
GPU, built from zensim.report.chakra's nodes of message logs (docs/reports.md)."""

from __future__ import annotations

from zensim.errors import ConfigError
from zensim.report.chakra import RankGraph, append_log, chakra_modules, encode_rank
from zensim.train.timeline import Timeline


def chakra_iteration(timeline: Timeline, iteration: int = 0) -> list[bytes]:
    """One training iteration of `timeline` (zensim.train.timeline) as a Chakra execution trace per GPU:
    a COMP_NODE for the forward pass, one for the backward compute up to each bucket's last gradient
    (in the order the buckets become ready) and for the rest of backward, each bucket's synchronization
    (the message logs of its parts, as chakra_traces writes one log: sends, receives, local work by the
    stage rules) after its backward node and after the previous bucket's synchronization (DDP's one
    communication stream, buckets in order), and the optimizer after the backward and every bucket.
    comm_tag numbers the messages through the whole iteration. Compute nodes carry their exact
    `seconds`; a scheme's local work is priced by the run's work costs, a dense collective's as the
    timeline prices it."""
    if any(sync.compress for sync in timeline.syncs):
        raise ConfigError("--chakra: not with a fusion strategy (its compression on the compute stream is not "
                          "exported)")
    pb, protolib = chakra_modules()
    graphs = [RankGraph(pb, r) for r in range(timeline.gpus)]
    prof, syncs = timeline.profile, timeline.syncs

    def compute(name: str, seconds: float, deps: list[list[int]]) -> list[int]:
        attrs = [pb.AttributeProto(name="seconds", double_val=seconds)]
        return [g.add(name, pb.COMP_NODE, deps[g.rank], attrs, round(seconds * 1e6)) for g in graphs]

    last = compute("forward", prof.forward_s, [[] for _ in graphs])
    backward, done = {}, 0.0
    for b in sorted(range(len(syncs)), key=lambda b: syncs[b].ready_s):
        last = backward[b] = compute(f"backward.bucket{b}", syncs[b].ready_s - done, [[x] for x in last])
        done = syncs[b].ready_s
    tail = compute("backward.tail", prof.backward_s - done, [[x] for x in last])
    comm: list[list[int]] = [[] for _ in graphs]
    tag = 0
    for b in range(len(syncs)):
        for g in graphs:
            g.ends = [backward[b][g.rank], *comm[g.rank]]
        for k, step in enumerate(timeline.bucket_steps(iteration, b)):
            work = timeline.costs.work if step.compression or timeline.dense_work is None else timeline.dense_work
            append_log(graphs, step.log, work, tag, f"bucket{b}.step{k}.")
            tag += len(step.log)
        comm = [g.ends for g in graphs]
    compute("optimizer", prof.optimizer_s, [[tail[r], *comm[r]] for r in range(len(graphs))])
    return [encode_rank(pb, protolib, g.nodes, len(graphs)) for g in graphs]
