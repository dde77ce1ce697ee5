"""Per-link bytes and utilization, and the traffic matrix between machines, from simulated records.

A simulated `RunRecord` carries what the network model carried: `link_bytes` (bytes per link, in the
link-id order of the cluster's topology) and `traffic` (the non-zero entries [src machine, dst
machine, bytes] of the machine x machine matrix; the diagonal is traffic inside a machine, over
NVLink). The cluster block of the record rebuilds the topology, so the links get their names, kinds
and capacities back from a results file, without simulating again (`zensim report --links`).

Utilization is the link's mean over the run: bytes / (capacity x the record's time).

    link_rows(records)     one row per (record, link): scheme, run, link, kind, machine, capacity, bytes, utilization
    traffic_rows(records)  one row per (record, machine pair that exchanged bytes)
    traffic_matrix(rec)    the machines x machines byte matrix (numpy)
    link_figure(records)   per record: utilization of every link, coloured by kind, and the traffic matrix
    link_files(records, {"links": path, "traffic": path, "link_plot": path})   the contents of those outputs
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from zensim.errors import ConfigError
from zensim.net.fabrics import build_topology
from zensim.net.links import LinkKind
from zensim.net.topology import ClusterSpec
from zensim.report.export import to_csv, to_json
from zensim.report.outputs import plot_format, table_format
from zensim.report.record import RunRecord

KIND_NAMES = {int(k): k.name.lower() for k in LinkKind}


def cluster_spec(rec: RunRecord) -> ClusterSpec:
    """The ClusterSpec a simulated record ran on, from its cluster block (every parameter is there)."""
    fields = {f.name for f in dataclasses.fields(ClusterSpec)}
    try:
        return ClusterSpec(**{k: v for k, v in rec.cluster.items() if k in fields})
    except (TypeError, ConfigError) as exc:
        raise ConfigError(f"{rec.scheme}: the record's cluster block does not describe a simulated cluster ({exc})") from None


def _with_links(records: Sequence[RunRecord], what: str) -> list[RunRecord]:
    """The records that carry per-link figures; a ConfigError naming `what` when none does."""
    have = [r for r in records if r.simulated and r.simulated.link_bytes]
    if not have:
        raise ConfigError(f"{what}: no record has per-link figures (only fifo and maxmin simulations do; "
                          "not the analytic model, not emulations, not results files written before records carried links)")
    return have


def _run_label(rec: RunRecord) -> str:
    """What tells records of one scheme apart in a file of several runs: the sweep point, else ''."""
    return ", ".join(f"{k}={v}" for k, v in rec.sweep.items())


def link_rows(records: Sequence[RunRecord], what: str = "--links") -> list[dict[str, Any]]:
    """One row per (record, link) of the records with per-link figures: scheme, run (the sweep point),
    link name, kind, machine (-1 for switch tiers), capacity (bytes/s), bytes, utilization."""
    rows = []
    for rec in _with_links(records, what):
        topo = build_topology(cluster_spec(rec))
        if len(rec.simulated.link_bytes) != topo.num_links:
            raise ConfigError(f"{what}: {rec.scheme}: {len(rec.simulated.link_bytes)} link figures for a cluster of "
                              f"{topo.num_links} links")
        nbytes = np.asarray(rec.simulated.link_bytes, dtype=np.float64)
        util = nbytes / (topo.capacity * rec.time_s) if rec.time_s else np.zeros_like(nbytes)
        machine = topo.machine_of_link().tolist()
        for k, name in enumerate(topo.names):
            rows.append({"scheme": rec.scheme, "run": _run_label(rec), "link": name, "kind": KIND_NAMES[int(topo.kind[k])],
                         "machine": machine[k], "capacity_Bps": float(topo.capacity[k]), "bytes": int(rec.simulated.link_bytes[k]),
                         "utilization": float(util[k])})
    return rows


def traffic_matrix(rec: RunRecord) -> np.ndarray:
    """The machines x machines matrix of bytes a record's run sent from machine i to machine j."""
    machines = int(rec.cluster.get("machines", 0))
    out = np.zeros((machines, machines), dtype=np.int64)
    for src, dst, nbytes in rec.simulated.traffic:
        out[src, dst] += nbytes
    return out


def traffic_rows(records: Sequence[RunRecord], what: str = "--traffic") -> list[dict[str, Any]]:
    """One row per (record, machine pair that exchanged bytes): scheme, run, src machine, dst machine, bytes."""
    return [{"scheme": rec.scheme, "run": _run_label(rec), "src_machine": src, "dst_machine": dst, "bytes": nbytes}
            for rec in _with_links(records, what) for src, dst, nbytes in rec.simulated.traffic]


def link_figure(records: Sequence[RunRecord]) -> Any:
    """Per record (a row of panels): the utilization of every link in link-id order, coloured by kind
    (NVLink, NIC, switch tiers), and the traffic matrix between machines (MB, log colour scale)."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    from zensim.report.plots import figure_title

    have = _with_links(records, "--link-plot")
    fig, axes = plt.subplots(len(have), 2, figsize=(15, 3.2 * len(have) + 1.2), squeeze=False,
                             gridspec_kw={"width_ratios": [3, 1]})
    colours = {LinkKind.NVLINK: "tab:green", LinkKind.NIC: "tab:blue", LinkKind.FABRIC: "tab:red"}
    for (ax_links, ax_matrix), rec in zip(axes, have):
        topo = build_topology(cluster_spec(rec))
        util = np.asarray(rec.simulated.link_bytes, dtype=np.float64) / (topo.capacity * rec.time_s) if rec.time_s else 0 * topo.capacity
        for kind, colour in colours.items():
            ids = topo.links_of_kind(kind)
            if ids.size:
                ax_links.bar(ids, util[ids], width=1.0, color=colour, label=f"{kind.name.lower()} ({ids.size} links)")
        label = rec.scheme + (f" @ {_run_label(rec)}" if rec.sweep else "")
        ax_links.set_ylabel("mean utilization")
        ax_links.set_title(f"{label}: {rec.time_s * 1e3:.4g} ms, busiest {rec.busiest_link} "
                           f"{rec.busiest_link_util or 0:.2f}", fontsize=8)
        ax_links.set_xlim(-0.5, topo.num_links - 0.5)
        ax_links.legend(fontsize=7, loc="upper right")
        matrix = traffic_matrix(rec) / 1e6
        shown = ax_matrix.imshow(np.where(matrix > 0, matrix, np.nan), cmap="viridis",
                                 norm=LogNorm() if (matrix > 0).any() else None)
        ax_matrix.set_xlabel("dst machine")
        ax_matrix.set_ylabel("src machine")
        fig.colorbar(shown, ax=ax_matrix, label="MB")
    axes[-1][0].set_xlabel("link id (per machine: NVLink up/down per GPU, then its NICs; then switch tiers)")
    fig.suptitle(figure_title(have[0]), fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / fig.get_figheight()))  # room for the two title lines
    return fig


def link_files(records: Sequence[RunRecord], paths: Mapping[str, Path],
               name: Callable[[str], str] = str) -> dict[Path, str | bytes]:
    """The contents of the outputs `links`, `traffic` (CSV or JSON, by the extension) and `link_plot`
    that `paths` names (others are ignored); `name(key)` is what errors call an output ('--links')."""
    files: dict[Path, str | bytes] = {}
    for key, rows in (("links", link_rows), ("traffic", traffic_rows)):
        if key in paths:
            table = rows(records, name(key))
            files[paths[key]] = to_csv(table) if table_format(paths[key], name(key)) == "csv" else to_json(table)
    if "link_plot" in paths:
        from zensim.report.plots import figure_bytes

        _with_links(records, name("link_plot"))
        files[paths["link_plot"]] = figure_bytes(link_figure(records), plot_format(paths["link_plot"]))
    return files
