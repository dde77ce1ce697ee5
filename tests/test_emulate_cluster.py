"""The namespace cluster: shaping in place, only project objects, teardown on every exit path, leftovers removed.
Every assertion about what exists looks only at the namespaces and run folders of the cluster the test
made (their names carry its owner's pid), so the tests pass while another emulation runs on the host."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from emulate import netns
from emulate.netns import LocalCluster, NamespaceError, project_host_links, project_namespaces, rank_addr
from zensim.errors import ConfigError

try:
    netns.check_privileges()
    REASON = None
except NamespaceError as exc:
    REASON = str(exc)
needs_netns = pytest.mark.skipif(REASON is not None, reason=f"cannot make network namespaces: {REASON}")
WAIT = 600.0  # another emulation (a validation run) may hold the lock; wait for it


def _qdiscs(ns: str) -> str:
    return subprocess.run(["tc", "-n", ns, "qdisc", "show"], capture_output=True, text=True).stdout


def _filters(ns: str, dev: str) -> str:
    return subprocess.run(["tc", "-n", ns, "filter", "show", "dev", dev, "parent", "10:"], capture_output=True, text=True).stdout


def _child(code: str) -> subprocess.Popen:
    """A python child that builds a cluster and then sleeps (to be killed or terminated)."""
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


CHILD = (
    "from emulate.netns import LocalCluster\nimport time\n"
    f"with LocalCluster(2, 1_000_000, wait_lock={WAIT}):\n    print('up', flush=True)\n    time.sleep(60)\n"
)


@needs_netns
def test_cluster_shapes_both_ends_and_tears_down():
    me = os.getpid()
    ours = [f"zsim-{me}-br", f"zsim-{me}-r0", f"zsim-{me}-r1", f"zsim-{me}-r2"]
    with LocalCluster(3, 5_000_000, wait_lock=WAIT) as c:
        assert project_namespaces(me) == ours
        for r in range(3):
            ns = netns.rank_ns(r, me)
            assert "tbf" in _qdiscs(ns) and "rate 5Mbit" in _qdiscs(ns)
            # acknowledgements first, then the data of each of the other two ranks in a class of its own
            filters = _filters(ns, f"zsim-e{r}")
            assert "htb 10: " in _qdiscs(ns) and "flowid 10:1 " in filters and "at 16" in filters  # ip dst
            assert sorted(f for f in filters.split() if f.startswith("10:1") and f != "10:1") == ["10:100", "10:101"]
            wmem = subprocess.run([*c.exec_prefix(r), "cat", "/proc/sys/net/ipv4/tcp_wmem"], capture_output=True, text=True)
            assert int(wmem.stdout.split()[1]) == netns.SOCKET_BUFFER
        bridge = _qdiscs(netns.bridge_ns(me))
        assert all(f"dev zsim-p{r} " in bridge for r in range(3)) and bridge.count("rate 5Mbit") == 3
        assert bridge.count("htb 10: ") == 3
        for r in range(3):  # the switch port towards rank r: acknowledgements first, then each source in turn
            filters = _filters(netns.bridge_ns(me), f"zsim-p{r}")
            assert "flowid 10:1 " in filters and "at 12" in filters and "at 16" not in filters  # ip src
            assert sorted(f for f in filters.split() if f.startswith("10:1") and f != "10:1") == ["10:100", "10:101"]
        routes = subprocess.run([*c.exec_prefix(1), "ip", "route"], capture_output=True, text=True).stdout
        assert "default" not in routes and routes.startswith("10.213.0.0/16")
        addrs = subprocess.run([*c.exec_prefix(2), "ip", "-4", "addr"], capture_output=True, text=True).stdout
        assert rank_addr(2) in addrs
        c.setup()  # idempotent: building again gives the same cluster
        assert project_namespaces(me) == ours and c.describe()["bridge_ns"] == ours[0]
    assert project_namespaces(me) == [] and project_host_links() == []


@needs_netns
def test_teardown_on_exception():
    with pytest.raises(RuntimeError):
        with LocalCluster(2, 1_000_000, wait_lock=WAIT):
            raise RuntimeError("boom")
    assert project_namespaces(os.getpid()) == [] and netns.project_run_dirs(os.getpid()) == []


@needs_netns
def test_teardown_on_sigterm_and_sigint():
    for sig in (signal.SIGTERM, signal.SIGINT):
        child = _child(CHILD)
        assert child.stdout.readline().strip() == "up"
        assert len(project_namespaces(child.pid)) == 3 and len(netns.project_run_dirs(child.pid)) == 1
        child.send_signal(sig)
        assert child.wait(timeout=30) != 0
        assert project_namespaces(child.pid) == [] and netns.project_run_dirs(child.pid) == []


@contextlib.contextmanager
def emulation_lock(timeout: float = WAIT):
    """Hold the emulation lock (once the owner and its reaper are done): what a test then finds is left."""
    with open(netns.LOCK_PATH, "a+") as f:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                assert time.monotonic() < deadline, "the emulation lock was not released"
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@needs_netns
def test_leftovers_are_removed_at_setup(tmp_path):
    # what a crash leaves if even the reaper could not clean: a namespace with a process, a run folder
    # of a dead owner (a pid above the kernel's largest); whoever holds the lock next removes them (this
    # cluster, or another emulation that took the lock first: then they are not in c.leftovers)
    dead = 2**22 + 1
    subprocess.run(["ip", "netns", "add", netns.rank_ns(1, dead)], check=True)
    sleeper = subprocess.Popen(["ip", "netns", "exec", netns.rank_ns(1, dead), "sleep", "60"])
    folder = Path(tempfile.mkdtemp(prefix=f"{netns.RUN_PREFIX}{dead}-"))
    (folder / "rank0.err").write_text("left over")
    time.sleep(0.2)
    with LocalCluster(2, 1_000_000, wait_lock=WAIT) as c:
        assert sleeper.wait(timeout=10) == -signal.SIGKILL
        assert not folder.exists() and netns.project_run_dirs(os.getpid()) == [c.run_dir]
        assert project_namespaces(dead) == []
    assert project_namespaces(os.getpid()) == [] and netns.project_run_dirs(os.getpid()) == []


@needs_netns
def test_a_killed_owner_is_cleaned_up_by_its_reaper():
    child = _child(CHILD)
    assert child.stdout.readline().strip() == "up"
    # a process living in a rank namespace, as a rank of the run would
    sleeper = subprocess.Popen(["ip", "netns", "exec", netns.rank_ns(1, child.pid), "sleep", "60"])
    time.sleep(0.2)
    assert len(netns.project_run_dirs(child.pid)) == 1
    child.kill()  # SIGKILL: no teardown of its own runs
    child.wait(timeout=10)
    with emulation_lock():  # released once the reaper is done
        assert sleeper.wait(timeout=10) == -signal.SIGKILL
        assert project_namespaces(child.pid) == [] and project_host_links() == []
        assert netns.project_run_dirs(child.pid) == []


@needs_netns
def test_lock_refuses_a_second_cluster():
    child = _child(CHILD)
    assert child.stdout.readline().strip() == "up"
    try:
        with pytest.raises(NamespaceError, match="another emulation"):
            with LocalCluster(2, 1_000_000, wait_lock=0):
                pass
        assert len(project_namespaces(child.pid)) == 3  # the refused cluster touched nothing
        assert project_namespaces(os.getpid()) == [] and netns.project_run_dirs(os.getpid()) == []
    finally:
        child.terminate()
        child.wait(timeout=30)
    assert project_namespaces(child.pid) == []


def test_frames_take_at_most_a_millisecond_within_the_mtu_bounds():
    for rate in (1e6, 5e6, 25e6, 50e6, 200e6, 1e9, 10e9):
        mtu = netns.link_mtu(rate)
        assert netns.MIN_MTU <= mtu <= netns.MAX_MTU
        assert mtu * 8 / rate <= netns.FRAME_SECONDS or mtu == netns.MIN_MTU
        assert mtu * 8 / rate >= 0.99 * netns.FRAME_SECONDS or mtu == netns.MAX_MTU
        shaping = netns.Shaping(int(rate), mtu)
        # the bucket: two frames or 2 ms, whichever is more; what runs ahead of the wire on an idle link
        assert shaping.burst_bytes * 8 / rate <= max(2 * netns.FRAME_SECONDS, 2 * (netns.MIN_MTU + 14) * 8 / rate) + 1e-3


def test_the_small_packet_filter_selects_exactly_the_short_packets():
    mask = next(int(args[args.index("match") + 3], 16) for args in netns.Shaping(25_000_000).qdisc_commands("d", ("10.213.0.2",), "dst")
                if args[0] == "filter")
    assert [length for length in range(1 << 16) if length & mask == 0] == list(range(netns.SMALL_PACKET))


def test_bad_arguments_are_one_line_errors():
    with pytest.raises(ConfigError, match="--ranks"):
        LocalCluster(1, 1_000_000)


def test_without_root_a_clear_error(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(NamespaceError, match="needs root"):
        netns.check_privileges()


def test_only_dash_prefixed_names_count_as_project_objects(monkeypatch):
    links = ("1: lo: <LOOPBACK,UP> mtu 65536\n2: zsimfoo: <BROADCAST> mtu 1500\n"
             "3: zsim-p0@if4: <BROADCAST> mtu 65000\n4: eth0@if9: <BROADCAST> mtu 1500\n")
    spaces = "zsim-7-r0 (id: 1)\nzsimother\nblue (id: 2)\nzsim-7-br\nzsim-71-r0\n"
    monkeypatch.setattr(netns, "_run", lambda cmd, check=True: subprocess.CompletedProcess(
        cmd, 0, links if "link" in cmd else spaces, ""))
    monkeypatch.setattr(netns.shutil, "which", lambda tool: f"/sbin/{tool}")
    assert project_host_links() == ["zsim-p0"]
    assert project_namespaces() == ["zsim-7-br", "zsim-7-r0", "zsim-71-r0"]
    assert project_namespaces(7) == ["zsim-7-br", "zsim-7-r0"]  # a run's own: not those of pid 71
