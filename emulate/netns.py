"""A local emulated cluster: one network namespace per rank, veths into a bridge, tc tbf shaping.

Layout (every object carries the prefix `zsim`, nothing is created in the host's namespace; P is
the pid of the process that owns the cluster, the per-run part of its namespaces' and run folder's names):

    namespace zsim-P-br      bridge zsim-br0, ports zsim-p0 .. zsim-p{n-1} (tbf: the rank's ingress)
    namespace zsim-P-r{r}    interface zsim-e{r} = 10.213.x.y/16 (tbf: the rank's egress)

The /16 is only ever configured inside these namespaces and no namespace has a default route, so
traffic can only flow between the project's namespaces. A machine-wide file lock makes one cluster
exist at a time; under the lock, any `zsim` namespace or `zsim-run-*` run folder found is a leftover
of a crashed run and is removed (processes in the namespaces killed first). Teardown runs on every
exit path of the context manager: normal end, exception, SIGINT, SIGTERM and SIGHUP (emulate.shield:
the first signal ends the run, later ones cannot interrupt the teardown); if the owner dies without
tearing down (SIGKILL), the reaper process it started (emulate.reaper) does it.
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from emulate.shield import SignalGuard
from zensim.errors import ConfigError, ZensimError

PREFIX = "zsim"
BRIDGE_DEV = f"{PREFIX}-br0"
SUBNET = ipaddress.ip_network("10.213.0.0/16")
# namespaces are machine-wide, so is their lock (not under $TMPDIR, which differs between users)
LOCK_PATH = f"/tmp/{PREFIX}-emulate.lock"
RUN_PREFIX = f"{PREFIX}-run-"  # run folders (rank stderr, progress, rank JSON) in the temporary directory
REAPER_DONE = b"d"  # what the owner of a cluster tells its reaper after its own teardown (emulate.reaper)
MAX_RANKS = SUBNET.num_addresses - 2
MIN_MTU, MAX_MTU = 1500, 65000
FRAME_SECONDS = 1e-3  # the longest a frame may take at the link rate (link_mtu)


class NamespaceError(ZensimError):
    """Network namespaces, veths or tc cannot be set up (not root, no netns support, missing tool)."""


def run_part(owner: int) -> str:
    """The start of every namespace and run folder name of the cluster owned by process `owner`."""
    return f"{PREFIX}-{owner}-"


def bridge_ns(owner: int) -> str:
    """Name of the bridge's network namespace of the cluster owned by process `owner`."""
    return f"{run_part(owner)}br"


def rank_ns(rank: int, owner: int) -> str:
    """Name of rank `rank`'s network namespace in the cluster owned by process `owner`."""
    return f"{run_part(owner)}r{rank}"


def rank_dev(rank: int) -> str:
    """Name of rank `rank`'s interface (inside its namespace); GLOO_SOCKET_IFNAME takes this."""
    return f"{PREFIX}-e{rank}"


def port_dev(rank: int) -> str:
    """Name of the bridge port (inside the bridge namespace) facing rank `rank`."""
    return f"{PREFIX}-p{rank}"


def _run_batch(ns: str, commands: list[list[str]]) -> None:
    """Run tc commands in namespace `ns` as one `tc -batch` (one process, not one per command); a
    failure names tc's error and the line it failed on (its last two lines)."""
    proc = _run(["tc", "-n", ns, "-batch", "-"], check=False, stdin="\n".join(" ".join(c) for c in commands) + "\n")
    if proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise NamespaceError(f"`tc -n {ns} -batch` failed: {' / '.join(msg[-2:]) if msg else 'exit ' + str(proc.returncode)}")


def rank_addr(rank: int) -> str:
    """IPv4 address of rank `rank` inside the private subnet."""
    return str(SUBNET.network_address + rank + 1)


def _run(cmd: list[str], check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
    """Run one ip/tc command (`stdin`: its input); failures become a NamespaceError naming the command.
    The command has a process group of its own: a Ctrl-C at the terminal (sent to the whole foreground
    group) must not kill an `ip netns del` of the teardown."""
    try:
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, process_group=0)
    except FileNotFoundError:
        raise NamespaceError(f"emulation needs iproute2: {cmd[0]} not found on PATH") from None
    if check and proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise NamespaceError(f"`{' '.join(cmd)}` failed: {msg[-1] if msg else 'exit ' + str(proc.returncode)}")
    return proc


def check_privileges() -> None:
    """Raise a one-line NamespaceError unless we can create network namespaces here."""
    missing = [tool for tool in ("ip", "tc") if shutil.which(tool) is None]
    if missing:
        raise NamespaceError(f"emulation needs iproute2: {', '.join(missing)} not found on PATH")
    if os.geteuid() != 0:
        raise NamespaceError("emulation needs root (network namespaces, veth, tc); run as root or use torchrun on a real cluster")
    if not os.path.exists("/proc/self/ns/net"):
        raise NamespaceError("this kernel has no network namespaces (/proc/self/ns/net missing)")


def project_namespaces(owner: int | None = None) -> list[str]:
    """Names of the existing network namespaces that belong to the project (prefix `zsim-`), or with
    `owner` only those of the cluster that process owns. Without iproute2 there are none of ours (a
    cluster is refused before any is made)."""
    if shutil.which("ip") is None:
        return []
    out = _run(["ip", "netns", "list"], check=False).stdout
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    start = f"{PREFIX}-" if owner is None else run_part(owner)
    return sorted(n for n in names if n.startswith(start))


def project_host_links() -> list[str]:
    """Project-named links in the host namespace (never created by us; a leftover if present)."""
    if shutil.which("ip") is None:
        return []
    out = _run(["ip", "-o", "link", "show"], check=False).stdout
    names = [line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line]
    return [n for n in names if n.startswith(f"{PREFIX}-")]  # as project_namespaces: not e.g. 'zsimfoo'


def _kill_namespace_processes(ns: str) -> None:
    """SIGKILL the processes still living in project namespace `ns` (rank processes of a dead run)."""
    for pid in _run(["ip", "netns", "pids", ns], check=False).stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def project_run_dirs(owner: int | None = None) -> list[Path]:
    """Run folders (`zsim-run-*`) in the temporary directory, or with `owner` those of process `owner`."""
    return sorted(Path(tempfile.gettempdir()).glob(f"{RUN_PREFIX}{'' if owner is None else f'{owner}-'}*"))


def remove_project_objects() -> list[str]:
    """Delete every project namespace (killing its processes), project host link and run folder;
    return what was removed. Call it only under the emulation lock (then all of them are ours)."""
    removed = []
    for ns in project_namespaces():
        _kill_namespace_processes(ns)
        _run(["ip", "netns", "del", ns], check=False)
        removed.append(ns)
    for link in project_host_links():
        _run(["ip", "link", "del", link], check=False)
        removed.append(link)
    for folder in project_run_dirs():
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(str(folder))
    return removed


MAX_TBF_LIMIT = 2**31 - 1  # tc's limit is a 32-bit byte count
SMALL_PACKET = 128  # IP packets shorter than this (bytes; a power of two) jump the data queue (Shaping.qdisc_commands)
SOCKET_BUFFER = 32 << 20  # TCP send and receive buffers in the rank namespaces (LocalCluster._make_ns)


def link_mtu(rate_bps: float) -> int:
    """MTU of the emulated links at `rate_bps`: a frame of FRAME_SECONDS at the rate, within
    [MIN_MTU, MAX_MTU]. tbf sends a whole frame once its bucket holds it, and its bucket must hold
    two, so a frame's time at the rate is how far ahead of the wire a transfer starting on an idle
    link runs (with 64 KB frames at 25 Mbit/s: 42 ms, a stage's worth). Frames of one millisecond
    keep that below 2 ms at every rate, and the packet rate, which costs the shared cores, at about
    a thousand per second per NIC direction whatever the rate."""
    return int(min(MAX_MTU, max(MIN_MTU, rate_bps / 8 * FRAME_SECONDS)))


@dataclass(frozen=True)
class Shaping:
    """tc tbf parameters for one direction of one rank's NIC; `senders` = how many peers may send to it
    at once (n - 1), which sizes the queue."""

    rate_bps: int
    mtu: int = 1500
    senders: int = 1

    @property
    def burst_bytes(self) -> int:
        """Bucket size: 2 ms at the rate, at least three full-size frames."""
        return max(2 * (self.mtu + 14), self.rate_bps // 8 // 500)

    @property
    def limit_bytes(self) -> int:
        """Queue length: deep enough to hold a full send buffer of every peer at once (and at least 200 ms
        at the rate), so an incast queues instead of dropping: the lossless fabric the simulator
        assumes (as RoCE with PFC). A shallow queue drops, and TCP's 200 ms retransmission timeouts
        then make stragglers no flow-level model has."""
        return min(MAX_TBF_LIMIT, max(256 * 1024, self.rate_bps // 8 // 5, self.senders * SOCKET_BUFFER))

    def tbf_args(self) -> list[str]:
        """Arguments after `tc qdisc replace dev DEV root`."""
        return ["tbf", "rate", f"{self.rate_bps}bit", "burst", str(self.burst_bytes), "limit", str(self.limit_bytes)]

    def qdisc_commands(self, dev: str, peers: tuple[str, ...], match: str) -> list[list[str]]:
        """The tc commands (after `tc [-n NS]`) that shape `dev`: tbf at the rate, and inside it an
        htb that only orders packets (its classes are never limited: ten times the rate). Small
        packets (pure TCP acknowledgements, IP length < SMALL_PACKET) go first; data goes to one
        class per address in `peers` (the packets' `match`: dst on a rank's NIC, src on the switch
        port towards it), served in turn a frame at a time. Each class is a byte FIFO as long as
        the tbf's queue.

        The acknowledgements of a flow travel the other direction of both NICs it crosses, behind
        the data of the flows going that way: in one deep FIFO (needed so that an incast queues
        instead of dropping) a pairwise exchange's acknowledgements waited up to a whole message
        behind the partner's data, and one direction of the pair stalled for hundreds of ms while
        the other ran at the rate. On a wire the acknowledgements of one direction do not wait for
        the other direction's data.

        A rank's NIC serves its destinations in turn, as an RDMA NIC serves its queue pairs, and
        the switch port towards a rank its sources, as a lossless fabric's pauses share a port
        among the flows into it: in one FIFO the flows of an all-to-all got unequal shares, some
        ended early and left their destinations' links idle while the others finished (a balanced
        all-to-all ran at 0.75-0.85 of the rate), and a flow that found a port busy waited behind
        the flow already queued there instead of sharing it. The simulator's flows share a link
        max-min fairly."""
        bfifo = ["bfifo", "limit", str(self.limit_bytes)]
        unlimited = ["htb", "rate", f"{10 * self.rate_bps}bit", "quantum", str(self.mtu + 14)]
        # (class, its FIFO's handle, peer address)
        data = [(f"10:{0x100 + i:x}", f"{0x1000 + i:x}:", addr) for i, addr in enumerate(peers)]
        out = [["qdisc", "replace", "dev", dev, "root", "handle", "1:", *self.tbf_args()],
               ["qdisc", "replace", "dev", dev, "parent", "1:1", "handle", "10:", "htb", "default", "1"]]
        for prio, (classid, handle, _) in [(0, ("10:1", "11:", None))] + [(1, d) for d in data]:
            out += [["class", "replace", "dev", dev, "parent", "10:", "classid", classid, *unlimited, "prio", str(prio)],
                    ["qdisc", "replace", "dev", dev, "parent", classid, "handle", handle, *bfifo]]
        out.append(["filter", "add", "dev", dev, "parent", "10:", "protocol", "ip", "prio", "1", "u32",
                    "match", "u16", "0", f"{0xFFFF & ~(SMALL_PACKET - 1):#x}", "at", "2", "flowid", "10:1"])
        out += [["filter", "add", "dev", dev, "parent", "10:", "protocol", "ip", "prio", "2", "u32",
                 "match", "ip", match, f"{addr}/32", "flowid", classid] for classid, _, addr in data]
        return out


class LocalCluster:
    """Context manager owning the namespaces of an n-rank emulated cluster shaped to `rate_bps` per NIC.

    `wait_lock` seconds to wait for another emulation to finish (0: fail at once); `mtu` of the links
    (default: link_mtu of the rate).
    """

    def __init__(self, n: int, rate_bps: int, wait_lock: float = 0.0, mtu: int | None = None) -> None:
        if not 2 <= n <= MAX_RANKS:
            raise ConfigError(f"--ranks: {n} is out of range (2..{MAX_RANKS})")
        mtu = link_mtu(rate_bps) if mtu is None else mtu
        if not 1280 <= mtu <= 65521:
            raise ConfigError(f"--mtu: {mtu} is out of range (1280..65521)")
        self.n = n
        self.shaping = Shaping(rate_bps, mtu, senders=n - 1)
        self.wait_lock = wait_lock
        self.leftovers: list[str] = []
        self.run_dir: Path | None = None
        self.owner = os.getpid()  # the per-run part of the names (setup: the process that builds it)
        self._lock_fd: int | None = None
        self._reaper: tuple[subprocess.Popen, int] | None = None
        self._guard = SignalGuard()

    # --- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> "LocalCluster":
        check_privileges()
        self._acquire_lock()
        try:
            self._start_reaper()
            self._guard.install()
            self.setup()
        except BaseException as exc:
            self.__exit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    def __exit__(self, exc_type: type | None, *exc: object) -> None:
        self._guard.shield()  # no signal interrupts the teardown; one that comes is raised after it
        try:
            self.teardown()
        finally:
            self._dismiss_reaper()
            self._release_lock()
            self._guard.restore(unwinding=exc_type is not None)

    def _acquire_lock(self) -> None:
        """Take the machine-wide emulation lock (so leftovers found under it are really leftovers)."""
        import time

        fd = os.open(LOCK_PATH, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.wait_lock
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                    os.close(fd)
                    raise NamespaceError(f"another emulation (pid {holder}) holds {LOCK_PATH}; wait for it to finish") from None
                time.sleep(0.5)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._lock_fd = fd

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def _start_reaper(self) -> None:
        """Start the process that tears down if this one dies first (emulate.reaper); it shares the
        lock's open file, so the lock stays held until it has finished."""
        read_end, write_end = os.pipe()  # not inheritable: only the reaper gets read_end (pass_fds)
        try:
            proc = subprocess.Popen([sys.executable, "-m", "emulate.reaper", str(self._lock_fd), str(read_end)],
                                    pass_fds=(self._lock_fd, read_end), start_new_session=True,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        self._reaper = proc, write_end

    def _dismiss_reaper(self) -> None:
        """Our own teardown is done: tell the reaper, which then exits doing nothing."""
        if self._reaper is None:
            return
        proc, write_end = self._reaper
        self._reaper = None
        try:
            os.write(write_end, REAPER_DONE)
        finally:
            os.close(write_end)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    # --- set-up and teardown -----------------------------------------------------------------
    def setup(self) -> None:
        """Create the cluster from scratch (removing leftovers first), so calling it twice is harmless."""
        self.leftovers = remove_project_objects()
        self.owner = os.getpid()
        self.run_dir = Path(tempfile.mkdtemp(prefix=f"{RUN_PREFIX}{self.owner}-"))
        prefix_len = SUBNET.prefixlen
        bridge = bridge_ns(self.owner)
        self._make_ns(bridge)
        _run(["ip", "-n", bridge, "link", "add", BRIDGE_DEV, "type", "bridge"])
        _run(["ip", "-n", bridge, "link", "set", BRIDGE_DEV, "up"])
        for r in range(self.n):
            ns, dev, port = rank_ns(r, self.owner), rank_dev(r), port_dev(r)
            self._make_ns(ns)
            _run(["ip", "-n", bridge, "link", "add", port, "type", "veth", "peer", "name", dev, "netns", ns])
            _run(["ip", "-n", bridge, "link", "set", port, "mtu", str(self.shaping.mtu), "master", BRIDGE_DEV, "up"])
            _run(["ip", "-n", ns, "addr", "add", f"{rank_addr(r)}/{prefix_len}", "dev", dev])
            _run(["ip", "-n", ns, "link", "set", dev, "mtu", str(self.shaping.mtu), "up"])
            peers = tuple(rank_addr(p) for p in range(self.n) if p != r)
            _run_batch(ns, self.shaping.qdisc_commands(dev, peers, match="dst"))
            _run_batch(bridge, self.shaping.qdisc_commands(port, peers, match="src"))

    @staticmethod
    def _make_ns(ns: str) -> None:
        """A fresh namespace with loopback up, IPv6 off (gloo must pick the IPv4 address), no TCP slow
        start after idle."""
        _run(["ip", "netns", "add", ns])
        _run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w",
              "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"])
        # a connection idle for a stage must not restart from a small window: the fluid model has
        # no slow start (nor has an RDMA fabric)
        _run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv4.tcp_slow_start_after_idle=0"])
        # socket buffers that hold a whole message from the start: the kernel then moves it at the
        # link rate by itself, and a rank process waiting for its turn on the shared cores does not
        # leave its link idle (a real NIC does not wait for the host's scheduler either)
        buffers = f"4096 {SOCKET_BUFFER} {SOCKET_BUFFER}"
        _run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", f"net.ipv4.tcp_wmem={buffers}", f"net.ipv4.tcp_rmem={buffers}"])
        _run(["ip", "-n", ns, "link", "set", "lo", "up"])

    def teardown(self) -> None:
        """Remove every project namespace, link and qdisc (deleting a namespace deletes its veths and
        qdiscs) and the run folder."""
        remove_project_objects()
        self.run_dir = None

    # --- use ---------------------------------------------------------------------------------
    def exec_prefix(self, rank: int) -> list[str]:
        """Command prefix that runs a program inside rank `rank`'s namespace."""
        return ["ip", "netns", "exec", rank_ns(rank, self.owner)]

    def describe(self) -> dict:
        """The cluster as a JSON-ready dict (for results and docs)."""
        s = self.shaping
        return {"ranks": self.n, "rate_bps": s.rate_bps, "tbf_burst_bytes": s.burst_bytes,
                "tbf_limit_bytes": s.limit_bytes, "mtu": s.mtu, "subnet": str(SUBNET), "bridge_ns": bridge_ns(self.owner)}
