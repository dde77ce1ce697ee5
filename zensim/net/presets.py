"""Cluster presets: the machines users have, as machine shapes and link figures (docs/simulator.md,
Presets, gives every figure's source).

Bandwidths are per direction: `nvlink` per GPU into its machine's NVLink fabric, `nic` per NIC. A
preset fixes GPUs per machine, the NIC layout (one per machine, or one per GPU on rails) and the
transport; explicit options and scenario keys still win over each of its figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from zensim.errors import ConfigError

# default one-way latency per inter-machine message, by transport (when neither the command line nor a
# profile gives one): kernel TCP over Ethernet vs RDMA (InfiniBand / RoCE, OS bypass)
TRANSPORT_LATENCY = {"tcp": 25e-6, "rdma": 2e-6}
NVLINK_LATENCY = 1e-6  # NVLink / NVSwitch, one-way per message


@dataclass(frozen=True)
class MachinePreset:
    """A machine type: GPUs, per-GPU NVLink bandwidth, NICs and transport, and the NIC latency to assume."""

    name: str
    gpus_per_machine: int
    nvlink: str
    nic: str
    nics: str  # machine | gpu
    transport: str
    nic_latency: str
    about: str


PRESETS = {p.name: p for p in [
    MachinePreset("p3.16xlarge", 8, "150GB/s", "25Gbps", "machine", "tcp", "25us",
                  "AWS, 8 x V100 SXM2 (NVLink 2.0 hybrid cube-mesh, 6 links x 25 GB/s per GPU), 25 Gbps ENA"),
    MachinePreset("p3dn.24xlarge", 8, "150GB/s", "100Gbps", "machine", "rdma", "15us",
                  "AWS, 8 x V100 SXM2 32 GB (NVLink 2.0, 6 links x 25 GB/s per GPU), 100 Gbps EFA (SRD)"),
    MachinePreset("dgx-a100", 8, "300GB/s", "200Gbps", "gpu", "rdma", "2us",
                  "NVIDIA DGX A100: 8 x A100 (NVLink 3, 12 links, NVSwitch: 600 GB/s per GPU both ways), "
                  "8 x ConnectX-6 HDR 200 Gb/s InfiniBand, one per GPU, rail-optimized"),
    MachinePreset("dgx-h100", 8, "450GB/s", "400Gbps", "gpu", "rdma", "2us",
                  "NVIDIA DGX H100: 8 x H100 (NVLink 4, 18 links, NVSwitch: 900 GB/s per GPU both ways), "
                  "8 x ConnectX-7 NDR 400 Gb/s InfiniBand, one per GPU, rail-optimized"),
]}


def machine_preset(name: str, what: str = "--preset") -> MachinePreset:
    """The preset called `name`, or a one-line ConfigError listing the known ones."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(f"{what}: unknown preset {name!r} (choose from {', '.join(PRESETS)})") from None


def ring_bandwidth(machines: int, nic_bw: float, tiers: Sequence[tuple[int, float]] = ()) -> float:
    """The bandwidth of the slowest hop of a ring over machines 0, 1, ..., n-1 on a fat-tree of these
    switch tiers (per tier from the bottom: members per group, oversubscription): each hop is one flow
    at a time on every link of its route, so it runs at min(B, C_t over the tiers t it crosses), where
    group uplinks have C_t = span_t B / (o_1 ... o_t) (span_t: machines under a group of tier t); the
    hop from n-1 back to 0 crosses every tier that has more than one group. Exact when every crossed
    tier's groups are full (ValueError otherwise)."""
    bw, span, ratio = nic_bw, 1, 1.0
    for size, oversub in tiers:
        span, ratio = span * size, ratio * oversub
        if machines > span:  # more than one group: the ring crosses this tier
            if machines % span:
                raise ValueError(f"no closed form: {machines} machines do not fill groups of {span}")
            bw = min(bw, span * nic_bw / ratio)
    return bw


def ring_allreduce_seconds(numel: int, machines: int, gpus: int, nvlink_bw: float, nvlink_lat: float, nic_bw: float,
                           nic_lat: float, nic_per_gpu: bool, model: str = "maxmin", value_bytes: int = 4,
                           tiers: Sequence[tuple[int, float]] = ()) -> float:
    """Closed form of a dense all-reduce of `numel` values as ZEN's layout runs it, ring over NVLink then
    NIC: a ring reduce-scatter inside each machine (g-1 steps of M/g bytes over NVLink), a ring
    all-reduce of each GPU's shard M/g across the machines (2(n-1) steps of s = M/(g n) bytes), a ring
    all-gather inside each machine; no local work, each step one message latency plus its bytes.

    Across machines the g shards' rings each have their own NIC on a rail (`nic_per_gpu`): 2(n-1)(L +
    s/B); or they share the machine's NIC: under max-min sharing they run in lockstep, 2(n-1)(L + g s/B);
    first come first served serves the g first messages one after the other, which staggers the rings
    by s/B each, and when the latency hides the others' messages (L >= (g-1) s/B) they never meet
    again: 2(n-1)(L + s/B) + (g-1) s/B (ValueError for fifo when L < (g-1) s/B, where no closed form is
    given). Exact when g divides numel and n divides numel / g.

    On a fat-tree (`tiers`, one NIC per machine) B is the ring's slowest hop, `ring_bandwidth`: the g
    rings' flows of a hop share its links as they share the NIC (fifo: only where no tier is slower
    than the NIC, ValueError otherwise)."""
    m = value_bytes * numel
    slowest = ring_bandwidth(machines, nic_bw, tiers)
    if slowest < nic_bw and model == "fifo" and gpus > 1:
        raise ValueError("fifo with a shared NIC: no closed form when a fabric tier is slower than the NIC")
    nic_bw = slowest
    intra = 2 * (gpus - 1) * (nvlink_lat + m / gpus / nvlink_bw) if gpus > 1 else 0.0
    if machines == 1:
        return intra
    steps, s = 2 * (machines - 1), m / gpus / machines / nic_bw  # seconds of one message on a NIC
    if nic_per_gpu or gpus == 1:
        return intra + steps * (nic_lat + s)
    if model == "maxmin":
        return intra + steps * (nic_lat + gpus * s)
    if nic_lat < (gpus - 1) * s:
        raise ValueError("fifo with a shared NIC: no closed form when the latency does not hide the queue")
    return intra + steps * (nic_lat + s) + (gpus - 1) * s
