"""Replaying message logs, under every registered sharing model: closed forms where they are exact,
stage dependencies, local work on shared cores, NIC and host efficiency, measured work."""

import numpy as np
import pytest

from zensim.schemes import closed as analytic
from zensim.net.costs import Costs
from zensim.net.models import MODELS
from zensim.net.profile import NicEfficiency, WorkCost
from zensim.net.replay import replay
from zensim.net.topology import ClusterSpec
from zensim.run.log import Message, MessageLog, Work

B = 25e9 / 8
MERGE_1US = WorkCost({"hash": 0.0, "merge": 1e-6, "encode": 0.0, "decode": 0.0, "copy": 0.0})


def cluster(n, gpus=1, **kw):
    return ClusterSpec(n, gpus, B, **kw)


def run(log, spec, model, work=None, host_of_rank=None, **costs):
    """Replay under zero work cost (or `work`) with extra Costs fields `costs`."""
    return replay(log, Costs(spec, work or WorkCost.zero(), **costs), model, host_of_rank=host_of_rank)


def stats(n, numel, nnz_union):
    """Stats of n workers with equal nnz per worker and union sizes nnz_union[k]."""
    return analytic.SparsityStats(n, 4 * numel, nnz_union[1] / numel, {k: u / numel for k, u in nnz_union.items()})


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("n", [2, 5, 8])
def test_dense_ring_allreduce_exact(model, n):
    numel = 1000 * n
    msgs = [Message(s, r, (r + 1) % n, 4 * numel // n, "dense") for s in range(2 * (n - 1)) for r in range(n)]
    t = run(MessageLog(n, 2 * (n - 1), msgs), cluster(n), model)
    want = analytic.dense_ring(stats(n, numel, {1: numel}), B)
    assert t.makespan == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("n", [3, 7])
def test_agsparse_p2p_and_ring_exact(model, n):
    numel, nnz = 10_000, 123
    st = stats(n, numel, {1: nnz})
    p2p = [Message(0, r, d, 8 * nnz, "coo") for r in range(n) for d in range(n) if d != r]
    ring = [Message(s, r, (r + 1) % n, 8 * nnz, "coo") for s in range(n - 1) for r in range(n)]
    for log in (MessageLog(n, 1, p2p), MessageLog(n, n - 1, ring)):
        assert run(log, cluster(n), model).makespan == pytest.approx(analytic.agsparse(st, B), rel=1e-9)


@pytest.mark.parametrize("model", MODELS)
def test_hierarchical_centralization_eq2_exact(model):
    # worker w holds block w (disjoint, k elements each): a union of 2^(i-1) workers has 2^(i-1) k
    n, numel, k = 8, 8000, 100
    msgs = [Message(i, r, r ^ (1 << i), 8 * k << i, "coo") for i in range(3) for r in range(n)]
    st = stats(n, numel, {1: k, 2: 2 * k, 4: 4 * k, 8: 8 * k})
    want = analytic.hierarchical_centralization(st, B)
    assert run(MessageLog(n, 3, msgs), cluster(n), model).makespan == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("model", MODELS)
def test_balanced_parallelism_eq1_exact(model):
    # identical index sets split evenly: push n-1 parts of nnz/n, pull n-1 aggregated parts (γ^n = 1)
    n, numel, nnz = 4, 40_000, 400
    part = 8 * nnz // n
    msgs = [Message(s, r, d, part, "coo") for s in range(2) for r in range(n) for d in range(n) if d != r]
    st = stats(n, numel, {1: nnz, 2: nnz, n: nnz})
    want = analytic.balanced_parallelism(st, B)
    assert run(MessageLog(n, 2, msgs), cluster(n), model).makespan == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("model", MODELS)
def test_alpha_beta_and_leafspine(model):
    topo = cluster(8, nic_latency=5e-6, fabric="leafspine", oversub=4.0, machines_per_leaf=4)
    one = MessageLog(8, 1, [Message(0, 0, 1, 10**6, "coo")])
    assert run(one, topo, model).makespan == pytest.approx(5e-6 + 1e6 / B, rel=1e-12)
    # four flows leaf 0 -> leaf 1 share one uplink of 4 b / 4 = b: each gets b/4
    cross = MessageLog(8, 1, [Message(0, r, 4 + r, 10**6, "coo") for r in range(4)])
    t = run(cross, topo, model)
    assert t.makespan == pytest.approx(5e-6 + 4e6 / B, rel=1e-9)


@pytest.mark.parametrize("model", MODELS)
def test_no_global_barrier_and_work(model):
    """Rank 0 and 1 exchange fast; rank 2 -> 3 is slow; ranks 0/1 start stage 1 before 2/3 finish stage 0."""
    msgs = [Message(0, 0, 1, 1000, "coo"), Message(0, 2, 3, 10**6, "coo"), Message(1, 1, 0, 1000, "coo")]
    work = [Work(1, 0, "post", "merge", 1000)]
    t = run(MessageLog(4, 2, msgs, work), cluster(4), model, MERGE_1US)
    assert t.stage_start[1, 1] == pytest.approx(1000 / B)
    assert t.stage_end[0, 1] == pytest.approx(2000 / B + 1e-3)
    assert t.stage_end[3, 0] == pytest.approx(1e6 / B)
    assert t.link_bytes.sum() == 2 * (2000 + 10**6)


@pytest.mark.parametrize("model", MODELS)
def test_zero_byte_message_costs_latency(model):
    t = run(MessageLog(2, 1, [Message(0, 0, 1, 0, "coo")]), cluster(2, nic_latency=1e-5), model)
    assert t.makespan == pytest.approx(1e-5)


def _eff(k, e1=0.9, k2=4, e2=0.6):
    """Independent form of the two-point efficiency curve: time per byte linear in k between the points."""
    k = min(max(k, 1), k2)
    return 1 / (1 / e1 + (k - 1) * (1 / e2 - 1 / e1) / (k2 - 1))


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_k_flows_on_a_nic_run_at_eff_k(model, k):
    """One rank sends k equal messages at once: its uplink carries k flows at bandwidth x eff(k)."""
    size = 10**6
    log = MessageLog(k + 1, 1, [Message(0, 0, d, size, "coo") for d in range(1, k + 1)])
    t = run(log, cluster(k + 1), model, nic_efficiency=NicEfficiency(((1, 0.9), (4, 0.6))))
    assert t.makespan == pytest.approx(k * size / (B * _eff(k)), rel=1e-9)


@pytest.mark.parametrize("model", MODELS)
def test_alltoall_with_nic_efficiency(model):
    """An all-to-all of n ranks: n-1 flows on every NIC link, (n-1) size / (b eff(n-1)); one point = constant."""
    n, size = 5, 10**5
    log = MessageLog(n, 1, [Message(0, r, d, size, "coo") for r in range(n) for d in range(n) if d != r])
    t = run(log, cluster(n), model, nic_efficiency=NicEfficiency(((1, 0.9), (4, 0.6))))
    assert t.makespan == pytest.approx((n - 1) * size / (B * _eff(n - 1)), rel=1e-9)
    flat = run(log, cluster(n), model, nic_efficiency=NicEfficiency(((3, 0.5),)))
    assert flat.makespan == pytest.approx((n - 1) * size / (B * 0.5), rel=1e-9)


@pytest.mark.parametrize("model", MODELS)
def test_full_efficiency_and_many_cores_change_nothing(model):
    """eff = 1 for every k and a pool with a core per rank give the default model's times exactly."""
    rng = np.random.default_rng(3)
    n = 6
    msgs = [Message(s, r, int(d), int(rng.integers(1, 10**5)), "coo")
            for s in range(2) for r in range(n) for d in rng.choice(n, 3, replace=False) if d != r]
    work = [Work(s, r, p, "merge", int(rng.integers(1, 10**4))) for s in range(2) for r in range(n) for p in ("pre", "post")]
    log = MessageLog(n, 2, msgs, work)
    topo = cluster(3, gpus=2)
    base = run(log, topo, model, MERGE_1US)
    same = run(log, topo, model, MERGE_1US, nic_efficiency=NicEfficiency(((1, 1.0),)), host_cores=2)
    assert same.stage_end == pytest.approx(base.stage_end, rel=1e-12)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("cores,want", [(1, 4.0), (2, 2.0), (4, 1.0), (None, 1.0)])
def test_ranks_share_host_cores(model, cores, want):
    """4 ranks with 1 s of local work each on one host: c cores take max(1, 4 / c) s."""
    log = MessageLog(4, 1, [], [Work(0, r, "pre", "merge", 10**6) for r in range(4)])
    t = run(log, cluster(4), model, MERGE_1US, host_cores=cores, host_of_rank=np.zeros(4, dtype=int))
    assert t.makespan == pytest.approx(want, rel=1e-12)
    # default hosts are machines: one rank per machine here, so every rank has its own core
    assert run(log, cluster(4), model, MERGE_1US, host_cores=1).makespan == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("model", MODELS)
def test_processor_sharing_of_unequal_jobs(model):
    """Jobs of 1, 1, 1 and 3 s on 2 cores: all at 1/2 speed until t = 2, then the long one alone: ends at 4."""
    work = [Work(0, r, "pre", "merge", e) for r, e in enumerate((10**6, 10**6, 10**6, 3 * 10**6))]
    t = run(MessageLog(4, 1, [], work), cluster(1, gpus=4), model, MERGE_1US, host_cores=2)  # one machine = one host
    assert t.stage_end[:, 0] == pytest.approx([2.0, 2.0, 2.0, 4.0], rel=1e-12)


def test_bad_host_cores_is_a_config_error():
    from zensim.errors import ConfigError

    with pytest.raises(ConfigError, match="host_cores"):
        Costs(cluster(2), host_cores=0)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("k", [1, 2, 4])
def test_host_efficiency_by_active_flows(model, k):
    """k disjoint pairs 2i -> 2i+1 at once: k flows in the network, every one at bandwidth x h(k)."""
    size, host = 10**6, NicEfficiency(((1, 1.0), (4, 0.5)))
    log = MessageLog(2 * k, 1, [Message(0, 2 * i, 2 * i + 1, size, "coo") for i in range(k)])
    t = run(log, cluster(2 * k), model, host_efficiency=host)
    assert t.makespan == pytest.approx(size / (B * host(k)), rel=1e-9)


@pytest.mark.parametrize("model", MODELS)
def test_measured_work_replaces_the_element_costs(model):
    """With measured_work = f the pre/post steps take the log's measured seconds x f, whatever the costs."""
    log = MessageLog(2, 1, [Message(0, 0, 1, 10**6, "coo")], [Work(0, 0, "pre", "merge", 10**9)])
    log.measured = np.zeros((2, 1, 2))
    log.measured[0, 0, 0], log.measured[1, 0, 1] = 0.5, 0.25
    cost = WorkCost({"hash": 0.0, "merge": 1.0, "encode": 0.0, "decode": 0.0, "copy": 0.0})
    t = run(log, cluster(2), model, cost, measured_work=2.0)
    assert t.makespan == pytest.approx(2 * 0.5 + 10**6 / B + 2 * 0.25, rel=1e-12)
    with pytest.raises(ValueError, match="no measured local work"):
        run(MessageLog(2, 1, [Message(0, 0, 1, 10, "coo")]), cluster(2), model, measured_work=1.0)


@pytest.mark.parametrize("model", MODELS)
def test_comm_wait_is_the_stage_less_its_local_work(model):
    # a ring with pre and post work on every (rank, stage), one processor per rank: each stage is
    # pre + the wait for messages + post, and the wait covers at least the stage's own message
    n, rng = 5, np.random.default_rng(7)
    msgs = [Message(s, r, (r + 1) % n, 10_000 * (1 + r), "dense") for s in range(3) for r in range(n)]
    work = [Work(s, r, p, "merge", int(rng.integers(1, 10**4))) for s in range(3) for r in range(n) for p in ("pre", "post")]
    log = MessageLog(n, 3, msgs, work)
    t = run(log, cluster(n), model, work=MERGE_1US)
    elements = np.zeros((n, 3))
    for w in work:
        elements[w.rank, w.stage] += w.elements
    np.testing.assert_allclose(t.comm_wait + 1e-6 * elements, t.stage_end - t.stage_start, rtol=1e-9, atol=1e-12)
    own = np.array([[10_000 * (1 + r) / B for _ in range(3)] for r in range(n)])
    assert (t.comm_wait >= own * (1 - 1e-9)).all()


@pytest.mark.parametrize("model", MODELS)
def test_rendezvous_moves_a_message_once_its_receiver_has_posted(model):
    # random messages and pre work on 6 ranks, 4 stages: with rendezvous every message starts when both
    # its sender and its receiver have injected that stage's sends; without, when its sender has
    n, stages, rng = 6, 4, np.random.default_rng(11)
    msgs = [Message(s, r, int(d), int(rng.integers(1, 10**6)), "coo") for s in range(stages) for r in range(n)
            for d in rng.choice([x for x in range(n) if x != r], size=2, replace=False)]
    work = [Work(s, r, "pre", "merge", int(rng.integers(0, 10**5))) for s in range(stages) for r in range(n)]
    log = MessageLog(n, stages, msgs, work)
    arrays = log.arrays()
    for rendezvous in (False, True):
        t = run(log, cluster(n), model, work=MERGE_1US, rendezvous=rendezvous)
        posted_src = t.transfer_start[arrays["src"], arrays["stage"]]
        posted_dst = t.transfer_start[arrays["dst"], arrays["stage"]]
        want = np.maximum(posted_src, posted_dst) if rendezvous else posted_src
        np.testing.assert_allclose(t.msg_start, want, rtol=0, atol=1e-15)
    early = t.transfer_start[arrays["dst"], arrays["stage"]] > t.transfer_start[arrays["src"], arrays["stage"]]
    assert early.any()  # the case is exercised: some senders ran ahead of their receivers


@pytest.mark.parametrize("model", MODELS)
def test_exchange_cpu_is_waited_for_and_shares_the_host(model):
    """The exchange's CPU (per stage a rank takes part in, per message and byte it sends) delays the
    sends inside the wait for messages; on one shared core the ranks' exchanges run one at a time."""
    from zensim.net.profile import ExchangeCost
    from zensim.net.replay import exchange_seconds

    n, size = 4, 50_000
    msgs = [Message(0, r, (r + 1) % n, size * (1 + r), "coo") for r in range(n)] + [Message(1, 0, 1, 8, "coo")]
    log = MessageLog(n, 2, msgs)
    x = ExchangeCost(per_stage=1e-3, per_message=2e-3, per_byte=1e-8)
    cost = exchange_seconds(log, Costs(cluster(n), WorkCost.zero(), exchange=x))
    want = np.array([[3e-3 + 1e-8 * size * (1 + r), 0.0] for r in range(n)])
    want[0, 1], want[1, 1] = 3e-3 + 8e-8, 1e-3  # stage 1: rank 0 sends, rank 1 only receives
    np.testing.assert_allclose(cost, want, rtol=1e-12)
    # one message 0 -> 1, each rank on its own processor: both wait the sender's exchange longer
    one = MessageLog(2, 1, [Message(0, 0, 1, size, "coo")])
    base, with_x = run(one, cluster(2), model), run(one, cluster(2), model, exchange=x)
    assert with_x.comm_wait[:, 0] == pytest.approx(base.comm_wait[:, 0] + 3e-3 + 1e-8 * size, rel=1e-9)
    assert with_x.stage_end - with_x.stage_start == pytest.approx(with_x.comm_wait, rel=1e-12)
    one_core = run(log, cluster(n), model, exchange=x, host_cores=1, host_of_rank=np.zeros(n, dtype=int))
    assert one_core.transfer_start[:, 0] == pytest.approx(0.0)
    assert one_core.makespan >= cost[:, 0].sum() + cost[:, 1].sum() - 1e-12  # one core does every exchange
