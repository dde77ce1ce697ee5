"""The reaper: a small process that removes an emulated cluster whose owner died without doing so.

A LocalCluster (emulate.netns) starts it (`python -m emulate.reaper LOCK_FD PIPE_FD`) right after
taking the emulation lock. The reaper lives in a session of its own (no terminal: neither Ctrl-C nor a hang-up
reaches it), shares the owner's lock (an inherited descriptor of the same open file, so the lock is
held until the reaper too has exited) and blocks reading a pipe whose write end only the owner
holds. After its own teardown the owner writes one byte, `d`, and closes the pipe: the reaper exits
having done nothing. If the owner dies first, whatever killed it (SIGKILL included), the read ends
with nothing and the reaper removes every project object (processes in the namespaces, namespaces
with their veths and qdiscs, run folders) before it exits and so releases the lock: nothing is
left and no other emulation can start in between.
"""

from __future__ import annotations

import os
import signal
import sys

from emulate.netns import REAPER_DONE, remove_project_objects


def main(argv: list[str]) -> int:
    """Wait for the owner; clean up unless it said it did."""
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    lock_fd, read_end = int(argv[0]), int(argv[1])
    said = b""
    while chunk := os.read(read_end, 16):
        said += chunk
    if said != REAPER_DONE:
        remove_project_objects()
    os.close(lock_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
