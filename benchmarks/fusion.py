"""The figures of issue 11: tensor missing rate, throughput per strategy, Espresso vs uniform, Gemini at 3B.

    .venv/bin/python benchmarks/fusion.py missing    [--steps 60] [--iterations 5] [--out out/fusion]
    .venv/bin/python benchmarks/fusion.py throughput [--nic 25Gbps] [--out out/fusion]
    .venv/bin/python benchmarks/fusion.py espresso   [--nic 25Gbps]
    .venv/bin/python benchmarks/fusion.py gemini     [--nic 25Gbps,100Gbps,400Gbps]

missing: dense gradients captured with torch here from two real models on real data (a GPT-style
transformer LM, the gpt-topk workload's model at 6 layers x 256 on the KJV; a ResNet with batch
norm on scikit-learn's digits), trained `--steps` steps, then `--iterations` gradients; the tensor
missing rate of sparsification-behind fusion against the fusion degree, top-k and DGC at 1%, both
readings of the degree (bytes, tensors), beside SAFusion Fig. 3's 75% / 81% at 100%.
throughput: none, layer-wise, sparsification-behind, SAFusion and Cupcake on BERT-base and GPT-2
(V100 FLOP estimate) at 16 x 8 GPUs, for DGC's compression cost and a threshold sparsifier's.
espresso: Espresso's strategy against every uniform strategy on BERT-base and GPT-2, its search time.
gemini: a 3B GPT (A100 bf16 estimate, ZeRO-1: sharded model states, data-parallel traffic) at 16 x 8:
checkpoints interleaved vs blocking, network idle time, the highest frequency under 1% overhead,
and the recovery probability of its placement. Each prints a table and writes JSON (and PNG) to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from run_record import host
from zensim.net.topology import ClusterSpec
from zensim.net.units import parse_bandwidth
from zensim.report.table import format_table
from zensim.train.background import Checkpoint, Wire, holders, recovery_formula, recovery_simulated
from zensim.train.fusion.chain import Affine
from zensim.train.fusion.espresso import Model, System, espresso
from zensim.train.fusion.missing import bucket_topk, fusion_buckets, missing_rate
from zensim.train.fusion.plots import missing_plot, throughput_plot
from zensim.train.fusion.shapes import DEVICES, MODELS, estimate, shape_profile
from zensim.train.fusion.registry import STRATEGIES
from zensim.train.fusion.strategies import Compression, Workload, plan

DEGREES = [round(d, 2) for d in np.linspace(0, 1, 11)]
DGC_COST = Affine(2.5e-4, 6.25e-11)        # thesis Fig. 5.2: ~0.25 ms flat to 4 MB
THRESHOLD_COST = Affine(2e-5, 6.25e-12)    # one pass over the tensor (SAFusion's threshold sparsifiers)


def machine() -> str:
    """What produced the figures."""
    return f"{os.cpu_count()} cores, shared"


# ------------------------------------------------------------------------------------------------ missing

def lm_gradients(steps: int, iterations: int) -> tuple[str, list[list[np.ndarray]]]:
    """The gpt-topk workload's transformer at 6 x 256 on the KJV: gradients after `steps` Adam steps."""
    from zensim.trace.capture.corpus import load_corpus
    from zensim.trace.capture.workloads.gpt import GPTTopK
    text = load_corpus(None)
    w = GPTTopK(text.tokens, text.vocab_size, batch_size=16, dim=256, heads=8, layers=6, seq_len=64)
    return "transformer LM (KJV)", train_and_capture(w.model, lambda s: w.loss(w.model, w.batch(s, 0, 1)),
                                                     w.optimizer(), steps, iterations)


def resnet_gradients(steps: int, iterations: int) -> tuple[str, list[list[np.ndarray]]]:
    """A ResNet (3 stages x 2 basic blocks, batch norm) on scikit-learn's digits."""
    import torch
    from sklearn.datasets import load_digits
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
            self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
            self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            return torch.relu(self.b2(self.c2(torch.relu(self.b1(self.c1(x))))) + self.down(x))

    torch.manual_seed(0)
    layers = [nn.Conv2d(1, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()]
    for cin, cout, stride in ((16, 16, 1), (16, 16, 1), (16, 32, 2), (32, 32, 1), (32, 64, 2), (64, 64, 1)):
        layers.append(Block(cin, cout, stride))
    model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
    digits = load_digits()
    x = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.tensor(digits.target)
    rng = np.random.default_rng(0)

    def loss(step: int):
        idx = torch.as_tensor(rng.choice(len(x), 64, replace=False))
        return nn.functional.cross_entropy(model(x[idx]), y[idx])

    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return "ResNet with BN (digits)", train_and_capture(model, loss, opt, steps, iterations)


VECTORS: dict[int, list[bool]] = {}   # per captured model: which tensors (gradient-ready order) are 1-d


def train_and_capture(model, loss_of, opt, steps: int, iterations: int) -> list[list[np.ndarray]]:
    """Train `steps` steps, then return `iterations` dense gradients, tensors in gradient-ready order."""
    params = [p for p in model.parameters() if p.requires_grad]
    VECTORS[id(model)] = [p.dim() == 1 for p in params][::-1]
    out = []
    for step in range(steps + iterations):
        opt.zero_grad()
        loss_of(step).backward()
        if step >= steps:
            out.append([p.grad.detach().numpy().ravel().astype(np.float64) for p in params][::-1])
        opt.step()
    return out


def cmd_missing(args) -> dict:
    """Missing rate against fusion degree on the two models' captured gradients."""
    from zensim.sparsify import make_sparsifier
    rows, curves, kinds = [], {}, []
    for make in (lm_gradients, resnet_gradients):
        t0 = time.perf_counter()
        name, grads = make(args.steps, args.iterations)
        print(f"{name}: {len(grads[0])} tensors, {sum(g.size for g in grads[0]):,} elements, "
              f"captured in {time.perf_counter() - t0:.0f} s", flush=True)
        for sel in ("topk", "dgc"):
            for by in ("bytes", "tensors"):
                rates = []
                for d in DEGREES:
                    per_it = []
                    for i, g in enumerate(grads):
                        choose = None
                        if sel == "dgc":
                            sp = make_sparsifier("dgc", 0.01, seed=i)
                            choose = lambda b, flat, sp=sp: np.asarray(sp.propose(str(b), flat))  # noqa: E731
                        per_it.append(missing_rate(g, d, 0.01, by, choose))
                    rates.append(float(np.mean(per_it)))
                curves[f"{name} / {sel} / by {by}"] = rates
                rows.append([name, sel, by, len(grads[0])] + [round(r, 3) for r in rates])
        buckets = [len(fusion_buckets([g.size for g in grads[0]], d)) for d in DEGREES]
        rows.append([name, "(buckets)", "bytes", len(grads[0])] + buckets)
        vectors = np.array(VECTORS.popitem()[1])
        missed = np.mean([[not m.any() for m in bucket_topk(g, (len(g),), 0.01)] for g in grads], axis=0) > 0.5
        kinds.append([name, len(vectors), int(vectors.sum()), int((missed & vectors).sum()), int((~vectors).sum()),
                      int((missed & ~vectors).sum())])
    print(format_table(rows, ["model", "selection", "degree by", "tensors"] + [f"{int(d * 100)}%" for d in DEGREES]))
    print("SAFusion Fig. 3 (DGC 1%): 75% (ResNet-152) and 81% (BERT-base) missing at 100%")
    print(format_table(kinds, ["model", "tensors", "1-d (bias, norm)", "1-d missing at 100%", "matrices, kernels",
                               "missing at 100%"]))
    write(Path(args.out) / "missing-rate.png",
          missing_plot(DEGREES, curves, f"sparsification-behind fusion, density 1% ({machine()})"))
    return {"degrees": DEGREES, "curves": curves, "missing_by_kind": kinds}


def write(path: Path, data: bytes) -> None:
    """Write an output file, its folder made first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    print(f"wrote {path}")


# ------------------------------------------------------------------------------------------------ throughput

def workload(name: str, device: str = "v100") -> Workload:
    """The model's FLOP estimate at its paper batch (BERT-base 32 x 128 tokens, GPT-2 8 x 1024)."""
    tokens, batch = {"bert-base": (32 * 128, 32), "gpt2": (8 * 1024, 8)}[name]
    e = estimate(MODELS[name](), tokens, DEVICES[device])
    return Workload(name, e.sizes, e.backward, e.forward, batch)


def chain_cluster(nic_text: str) -> ClusterSpec:
    """The 16 x 8 GPU cluster the chain-model strategies are priced on (5 us NIC, 2 us NVLink latency)."""
    return ClusterSpec(16, 8, parse_bandwidth(nic_text, "--nic"), nic_latency=5e-6, nvlink_latency=2e-6)


def cmd_throughput(args) -> dict:
    """Samples/s of the five strategies, two models, two compression costs."""
    c = chain_cluster(args.nic)
    rows, out = [], []
    for name in ("bert-base", "gpt2"):
        w = workload(name)
        for cost_name, cost in (("dgc", DGC_COST), ("threshold", THRESHOLD_COST)):
            base = None
            for s in STRATEGIES:
                p = plan(s, w, c, Compression(encode=cost))
                base = base or p.samples_per_s
                rows.append([name, cost_name, s, p.groups, round(p.iteration * 1e3, 2), round(p.samples_per_s),
                             round(p.samples_per_s / base, 3)])
                out.append({"model": name, "cost": cost_name, "strategy": s, "groups": p.groups,
                            "iteration_s": p.iteration, "samples_per_s": p.samples_per_s})
    print(format_table(rows, ["model", "compression cost", "strategy", "groups", "iteration ms", "samples/s", "vs none"]))
    print(f"16 x 8 GPUs, NIC {args.nic}, NVLink 300 GB/s, V100 FLOP estimate, top-k 1% COO")
    series = {f"{m} / {cost} cost": [next(r["samples_per_s"] for r in out if (r["model"], r["cost"], r["strategy"]) == (m, cost, s))
                                     for s in STRATEGIES] for m in ("bert-base", "gpt2") for cost in ("dgc", "threshold")}
    write(Path(args.out) / "throughput.png",
          throughput_plot(STRATEGIES, series, f"16 x 8 GPUs, NIC {args.nic}, top-k 1% (model estimate)"))
    return {"rows": out}


# ------------------------------------------------------------------------------------------------ espresso

def espresso_system(nic_text: str) -> System:
    """Espresso's 16 x 8 GPU system at this NIC speed: NVLink, DGC on the GPU, CPU compression profiles."""
    nic = parse_bandwidth(nic_text, "--nic")
    return System(16, 8, nic, 300e9 / 2, 0.02, DGC_COST, Affine(1e-4, 6.25e-11),
                  Affine(1e-3, 1 / 2e9), Affine(5e-4, 1 / 2e9), nic_latency=5e-6, intra_latency=2e-6)


def cmd_espresso(args) -> dict:
    """Espresso's decisions against the best uniform strategy on two models."""
    s = espresso_system(args.nic)
    rows, out = [], []
    for name in ("bert-base", "gpt2"):
        w = workload(name)
        d = espresso(Model(w.sizes, w.backward, w.forward), s)
        best_name, best_t = d.best_uniform
        fp32 = min(d.uniform["fp32/hier"], d.uniform["fp32/flat"])
        rows.append([name, len(w.sizes), round(d.time * 1e3, 2), best_name, round(best_t * 1e3, 2),
                     round(fp32 * 1e3, 2), round(best_t / d.time, 3), round(d.seconds, 2), d.evaluations, d.offload])
        out.append({"model": name, "espresso_s": d.time, "best_uniform": best_name, "best_uniform_s": best_t,
                    "fp32_s": fp32, "search_s": d.seconds, "evaluations": d.evaluations, "counts": d.counts(),
                    "uniform": d.uniform})
        print(f"{name}: {d.counts()}")
    print(format_table(rows, ["model", "tensors", "espresso ms", "best uniform", "uniform ms", "fp32 ms",
                              "speedup vs uniform", "search s", "timelines", "offload search"]))
    print(f"16 x 8 GPUs, NIC {args.nic}, V100 FLOP estimate, DGC 1% on GPU / CPU cost profiles ({machine()})")
    return {"rows": out}


# ------------------------------------------------------------------------------------------------ gemini

def cmd_gemini(args) -> dict:
    """A 3B GPT at 16 x 8 on the iteration timeline: interleaved vs blocking checkpoints as a client of
    the network model, idle time, the highest frequency under 1% overhead, and recovery."""
    from zensim.net.costs import Costs
    from zensim.train.buckets import DDPBuckets
    from zensim.train.gemini import first_period_under, interleaved_plan, iteration_spans, measure
    from zensim.train.iteration import simulate_iteration
    from zensim.train.syncs import DENSE

    profile = shape_profile("gpt-3b", 8 * 1024, "a100-bf16", 8, optimizer_s=0.03)
    params, machines, gpus = profile.numel, 16, 8
    states = 14 * params / machines          # bf16 params + fp32 master, Adam m and v, sharded (ZeRO-1)
    ckpt = Checkpoint(states, replicas=2, buffer_bytes=gpus * 128 * 2**20, buffers=4, mu=0.9)
    bucketing = DDPBuckets(max(40e6, 1e6 * machines * gpus) * 4 / 2**20)   # Megatron's bucket: max(40M, 1M x dp) elements
    rows, out = [], []
    for nic_text in args.nic.split(","):
        t0, c0 = time.perf_counter(), time.process_time()
        costs = Costs(ClusterSpec.parse(machines, gpus, nic_text, "25us", nvlink_latency="1us"))

        def simulate(n: int, background=None):
            return simulate_iteration(profile, DENSE, costs, bucketing=bucketing, iterations=n, background=background).run

        probe = simulate(3)  # iteration 1 is a steady one: its NIC idle spans
        iteration = float(probe.iteration_end[1].max() - probe.iteration_end[0].max())
        spans, _ = iteration_spans(probe, 0, 1, gpus)
        wire = Wire(costs.cluster.nic_bandwidth, costs.cluster.nic_latency)
        # Algorithm 6.2's own estimate (free to compute) says from which period on to measure
        start = next((k for k in range(1, 65) if interleaved_plan(spans, ckpt, wire, k)[1] < 0.01 * k * iteration), 64)
        baseline = probe
        cache: dict[tuple[str, int], object] = {}

        def cost(mode: str, k: int):
            nonlocal baseline
            if (mode, k) not in cache:
                if len(baseline.iteration_end) < 1 + 2 * k:
                    baseline = simulate(1 + 2 * k)
                cache[mode, k] = measure(simulate, costs, ckpt, every=k, mode=mode, baseline=baseline)
            return cache[mode, k]

        one_inter, one_block = cost("interleaved", 1), cost("blocking", 1)
        found_i = first_period_under(lambda k: cost("interleaved", k), iteration, start=max(1, start - 1))
        # blocking: the checkpoint is sent within one iteration, so its overhead per checkpoint is the
        # one measured at k = 1 whatever the period; the period follows from it
        k_b = int(one_block.overhead_s / (0.01 * iteration)) + 1
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        k_i = found_i[0] if found_i else None
        rows.append([nic_text, round(iteration, 3), round(one_inter.idle_s, 3), round(states / 1e9, 2),
                     round(one_inter.overhead_s, 3), round(100 * one_inter.fraction, 2), round(one_inter.idle_after_s, 3),
                     round(one_block.overhead_s, 3), round(100 * one_block.fraction, 2), k_i,
                     round(100 * found_i[1].fraction, 2) if found_i else None, k_b,
                     round(100 * one_block.overhead_s / (k_b * iteration), 2), round(wall), round(cpu)])
        out.append({"nic": nic_text, "iteration_s": iteration, "idle_s": one_inter.idle_s,
                    "checkpoint_bytes_per_machine": states, "measured": [vars(v) for v in cache.values()],
                    "every_k_interleaved": k_i, "every_k_blocking": k_b, "wall_s": wall, "cpu_s": cpu})
        print(f"{nic_text}: measured {sorted(cache)} in {wall:.0f} s wall, {cpu:.0f} s CPU", flush=True)
    print(format_table(rows, ["NIC", "iteration s", "NIC idle s", "ckpt GB/machine", "interleaved k=1 s", "%",
                              "idle after s", "blocking k=1 s", "%", "every k (interleaved, <1%)", "% there",
                              "every k (blocking, <1%)", "% there", "wall s", "CPU s"]))
    print(f"GPT {params / 1e9:.2f}B ({profile.source}), 16 x 8 GPUs, dense fp32 all-reduce in Megatron-size buckets "
          f"on the iteration timeline (fifo), m = 2 replicas, R = 128 MB x 8 GPUs in 4 sub-buffers, mu = 0.9")
    rng = np.random.default_rng(0)
    rec = []
    for k in range(2, 6):
        sim, se = recovery_simulated(holders(machines, 2), k, 200_000, rng)
        ring, _ = recovery_simulated(holders(machines, 2, "ring"), k, 200_000, rng)
        rec.append([k, round(recovery_formula(machines, 2, k), 4), round(sim, 4), round(se, 4), round(ring, 4)])
    print(format_table(rec, ["failed k", "Corollary 6.1", "simulated", "std err", "ring (simulated)"]))
    return {"rows": out, "recovery": rec}


def main() -> None:
    """Parse the figure's name and options, print it, write its JSON (and PNG)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("figure", choices=["missing", "throughput", "espresso", "gemini"])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--nic", default=None)
    ap.add_argument("--out", default="out/fusion")
    args = ap.parse_args()
    args.nic = args.nic or ("25Gbps,100Gbps,400Gbps" if args.figure == "gemini" else "25Gbps")
    start = host()
    result = {"missing": cmd_missing, "throughput": cmd_throughput, "espresso": cmd_espresso,
              "gemini": cmd_gemini}[args.figure](args)
    path = Path(args.out) / f"{args.figure}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"machine": machine(), "command": f"benchmarks/fusion.py {args.figure}", "host": start,
                                **result}, indent=1, default=str))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
