"""The compiled replay's per-event cost against a floor: a C++ heap loop of the same semantics on the same
log (issue 27, item 3: events/s within 3x of it).

The log: a dense ring all-reduce of `--numel` fp32 elements (default 10M) over `--ranks` (default 1024)
ranks, one GPU per machine (`zensim.layout.dense_log`, default work costs, 25 Gbit/s NICs): every
flow is alone on its links, so the maxmin replay's events are the ranks' work timers, the isolated
flows' finishes and the deliveries. The floor (C++ written below, compiled with g++ -O2 at run time;
skipped with a message where there is no compiler) keeps the same state - per (rank, stage) slot its
messages left and whether it has sent, per link its flows - and the same events in a binary heap
ordered by (time, scheduling order), with the same floating-point operations, so its makespan and
event count must equal zensim's (printed; it stops with a message if a flow would share a link). Both
are timed on CPU after loading: zensim's compiled loop (fastmaxmin, after a two-rank replay has
loaded it) from `LogReplay.run_compiled`, the C++ loop around its event loop only (its input read
first). Prints events, CPU seconds and events per second of each, and the ratio.

    .venv/bin/python benchmarks/heap_floor.py [--ranks 1024] [--numel 10000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from zensim.layout import dense_log
from zensim.net import fastloop
from zensim.net.costs import Costs
from zensim.net.network import Network
from zensim.net.replay import LogReplay, replay
from zensim.net.topology import ClusterSpec
from zensim.run.log import Message, MessageLog

BANDWIDTH = 25e9 / 8

FLOOR = r"""
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <queue>
#include <string>
#include <vector>
struct Ev { double t; int64_t seq; int kind; int64_t a, b; };
struct Later { bool operator()(const Ev& x, const Ev& y) const { return x.t > y.t || (x.t == y.t && x.seq > y.seq); } };
enum { SEND, END, ISOLATED, DELIVER, BEGIN_, FINISH_ };
template <class T> std::vector<T> rd(const std::string& dir, const char* name) {
  std::vector<T> v; FILE* f = fopen((dir + "/" + name).c_str(), "rb"); if (!f) { perror(name); exit(2); }
  fseek(f, 0, SEEK_END); long size = ftell(f); fseek(f, 0, SEEK_SET); v.resize(size / sizeof(T));
  if (fread(v.data(), sizeof(T), v.size(), f) != v.size()) exit(2); fclose(f); return v; }
int main(int argc, char** argv) {
  std::string d = argv[1]; int64_t width = atoll(argv[2]), pad = atoll(argv[3]);
  auto order = rd<int64_t>(d, "order"), bounds = rd<int64_t>(d, "bounds"), pending = rd<int64_t>(d, "pending"),
       stages = rd<int64_t>(d, "stages"), base = rd<int64_t>(d, "slot_base"), stage = rd<int64_t>(d, "stage"),
       src = rd<int64_t>(d, "src"), dst = rd<int64_t>(d, "dst"), routes = rd<int64_t>(d, "routes");
  auto pre = rd<double>(d, "pre"), post = rd<double>(d, "post"), nbytes = rd<double>(d, "nbytes"),
       fastest = rd<double>(d, "fastest"), latency = rd<double>(d, "latency");
  std::clock_t c0 = std::clock();
  std::vector<int64_t> nflows(pad + 1, 0); std::vector<char> sent(pending.size(), 0);
  std::vector<Ev> store; store.reserve(nbytes.size() + stages.size() + 16);
  std::priority_queue<Ev, std::vector<Ev>, Later> heap(Later(), std::move(store));
  int64_t seq = 0; double makespan = 0, now = 0;
  auto push = [&](double t, int k, int64_t a, int64_t b) { heap.push({t, seq++, k, a, b}); };
  auto step = [&](int64_t r, int64_t s, int from) {  // a rank from BEGIN_, SEND or FINISH_ until it waits
    while (true) {
      int64_t slot = base[r] + s;
      if (from == BEGIN_) { if (pre[slot] > 0) { push(now + pre[slot], SEND, r, s); return; } from = SEND; }
      if (from == SEND) {
        sent[slot] = 1;
        for (int64_t j = bounds[slot]; j < bounds[slot + 1]; ++j) {
          int64_t m = order[j]; const int64_t* route = &routes[m * width];
          if (route[0] == pad || nbytes[m] == 0) { push(now + latency[m], DELIVER, m, 0); continue; }
          for (int64_t i = 0; i < width && route[i] != pad; ++i)
            if (nflows[route[i]]++) { fprintf(stderr, "message %ld shares a link\n", (long)m); exit(3); }
          push(now + nbytes[m] / fastest[m], ISOLATED, m, 0);
        }
        if (pending[slot] != 0) return;
        from = FINISH_;
      }
      if (from == FINISH_) { if (post[slot] > 0) { push(now + post[slot], END, r, s); return; } }
      if (now > makespan) makespan = now;
      if (s + 1 < stages[r]) { ++s; from = BEGIN_; continue; }
      return;
    }
  };
  for (int64_t r = 0; r < (int64_t)stages.size(); ++r) if (stages[r]) step(r, 0, BEGIN_);
  while (!heap.empty()) {
    Ev e = heap.top(); heap.pop(); now = e.t;
    if (e.kind == SEND) step(e.a, e.b, SEND);
    else if (e.kind == END) { int64_t r = e.a, s = e.b; if (now > makespan) makespan = now;
      if (s + 1 < stages[r]) step(r, s + 1, BEGIN_); }
    else if (e.kind == ISOLATED) { const int64_t* route = &routes[e.a * width];
      for (int64_t i = 0; i < width && route[i] != pad; ++i) --nflows[route[i]];
      push(now + latency[e.a], DELIVER, e.a, 0); }
    else { int64_t m = e.a, s = stage[m]; int64_t rs[2] = {src[m], dst[m]};
      for (int64_t r : rs) { int64_t slot = base[r] + s; if (--pending[slot] == 0 && sent[slot]) step(r, s, FINISH_); } }
  }
  printf("%ld %.17g %.6f\n", (long)seq, makespan, double(std::clock() - c0) / CLOCKS_PER_SEC);
}
"""


def ours(log: MessageLog, costs: Costs) -> tuple[LogReplay, Network, float]:
    """zensim's compiled maxmin replay of the log (its loop loaded first): the client, network, CPU s."""
    tiny = MessageLog(2, 1, [Message(0, 0, 1, 1000, "coo"), Message(0, 1, 0, 1000, "coo")])
    replay(tiny, Costs(ClusterSpec(2, 1, BANDWIDTH)), "maxmin")
    net = Network(costs, "maxmin")
    client = LogReplay(net, log)
    c0 = time.process_time()
    client.run_compiled()
    return client, net, time.process_time() - c0


def export(client: LogReplay, net: Network, out: Path) -> tuple[int, int]:
    """The floor's input files; returns (route width, the padding link id)."""
    a = client.arrays
    n = client.log.n
    routes = fastloop.compact_routes(net)
    capacity = np.append(net.capacity, np.inf)
    cols = {"order": a["order"], "bounds": a["bounds"], "pending": a["pending"],
            "stages": np.full(n, client.stages), "slot_base": np.arange(n) * client.stages, "stage": a["stage"],
            "src": a["src"], "dst": a["dst"], "routes": routes, "pre": a["pre"], "post": a["post"],
            "nbytes": net.nbytes[:net.count], "fastest": capacity[routes].min(axis=1),
            "latency": net.route_latency[:net.count]}
    for name, col in cols.items():
        dtype = np.float64 if name in ("pre", "post", "nbytes", "fastest", "latency") else np.int64
        np.ascontiguousarray(col, dtype).tofile(out / name)
    return routes.shape[1], net.num_links


def main() -> None:
    """Time both loops and print their figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--numel", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each loop (the fastest is reported)")
    args = ap.parse_args()
    compiler = shutil.which("g++")
    if compiler is None:
        print("heap_floor: no g++ on this machine: the C++ floor is skipped")
        return
    log = dense_log(args.ranks, 1, args.numel, "flat")
    costs = Costs(ClusterSpec(args.ranks, 1, BANDWIDTH))
    runs = [ours(log, costs) for _ in range(args.repeat)]
    client, net, _ = runs[0]
    cpu = min(r[2] for r in runs)
    if net.model.solves:
        print(f"heap_floor: {net.model.solves} solves: a flow shared a link, the floor does not apply", file=sys.stderr)
        sys.exit(1)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "floor.cpp").write_text(FLOOR)
        built = subprocess.run([compiler, "-O2", "-std=c++17", "-o", str(d / "floor"), str(d / "floor.cpp")],
                               capture_output=True, text=True)
        if built.returncode:
            print(f"heap_floor: g++ failed, the C++ floor is skipped: {built.stderr.strip()[-300:]}")
            return
        width, pad = export(client, net, d)
        floor = []
        for _ in range(args.repeat):
            out = subprocess.run([str(d / "floor"), str(d), str(width), str(pad)], capture_output=True, text=True)
            if out.returncode:
                print(f"heap_floor: the C++ loop failed: {out.stderr.strip()}", file=sys.stderr)
                sys.exit(1)
            events, makespan, seconds = out.stdout.split()
            floor.append((int(events), float(makespan), float(seconds)))
    events, makespan, seconds = min(floor, key=lambda f: f[2])
    timing = client.timing()
    print(f"dense-allreduce, {args.ranks} ranks flat, {len(log)} messages (best of {args.repeat}):")
    print(f"  zensim fastmaxmin: {net.events} events, {cpu:.3f} s CPU, {net.events / cpu:,.0f} events/s, "
          f"makespan {timing.makespan!r}")
    print(f"  C++ heap loop:     {events} events, {seconds:.3f} s CPU, {events / seconds:,.0f} events/s, "
          f"makespan {makespan!r}")
    print(f"  same events and makespan: {events == net.events and makespan == timing.makespan}; "
          f"zensim / floor time per event: x{(cpu / net.events) / (seconds / events):.1f}")


if __name__ == "__main__":
    main()
