"""SimPy processes on zensim's network: one clock, SimPy's environment, for both.

Researchers model stragglers, background jobs and compute as SimPy processes; this adapter lets such
processes use zensim's links and sharing models (every registered one: fifo, maxmin, ...):

    env = simpy.Environment()
    sim = SimPyNetwork(env, costs, "maxmin")                  # costs: zensim.net.costs.Costs
    def rank(env):
        yield env.timeout(1e-3)                               # a straggler: 1 ms late
        m = yield sim.send(0, 1, 4e6)                         # GPU 0 -> GPU 1, 4 MB; resumes when it has arrived
        yield sim.compute(0, 2e-4)                            # local work on host 0 (its processors)
    env.process(rank(env))
    env.run()                                                 # env.now == sim.network.now, seconds

The network's clock is the environment (`SimPyClock`): zensim schedules its callbacks as SimPy events,
so `env.now` is zensim's time (seconds, the unit of every zensim time) and a process's `yield` waits
on the same event queue as the network's transfers. Within an instant the order is SimPy's
(URGENT, then NORMAL events in the order scheduled, zensim's timers among them), then zensim's `late`
callbacks (priority LATE_PRIORITY, after every ordinary event of the instant, also those scheduled
meanwhile): maxmin solves once per instant for every send of that instant, whichever process made it.

`send` returns an event that fires when the message's last byte has arrived (its value: the message
id); with a `tag` the receiver can wait for it with `receive(dst, tag)`, before or after it was sent.
`replay(log)` starts a message log as a zensim client (zensim.net.replay.LogReplay) on the same links;
its event fires when the log's last rank has ended (value: its Timing). The compiled replay loops never
run on such a network (other processes share it): the general path, the same times.

SimPy is the optional extra `simpy` (`pip install 'zensim[simpy]'`); importing this module without it
is an ImportError that says so.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping

import numpy as np

try:
    import simpy
except ImportError:  # pragma: no cover - depends on the environment
    raise ImportError("zensim.net.simpy_adapter needs SimPy: pip install 'zensim[simpy]'") from None

from zensim.net.costs import Costs
from zensim.net.network import Network
from zensim.net.profile import WorkCost
from zensim.net.replay import LogReplay
from zensim.run.log import MessageLog

LATE_PRIORITY = 2  # after simpy.events.URGENT (0) and NORMAL (1): zensim.net.clock's LATE


class _Call(simpy.Event):
    """A zensim callback as a SimPy event: fn(*args) when the environment processes it."""

    def __init__(self, env: simpy.Environment, delay: float, priority: int, fn: Callable, args: tuple) -> None:
        super().__init__(env)
        self._ok, self._value = True, None  # triggered at creation, as simpy.Timeout is
        self.callbacks.append(lambda _: fn(*args))
        env.schedule(self, priority, delay)


class SimPyClock:
    """zensim.net.clock.EventLoop over a SimPy environment: `at` and `late` schedule SimPy events,
    `now` is `env.now`, `run` is `env.run`."""

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.events = 0

    @property
    def now(self) -> float:
        """The environment's time, seconds."""
        return self.env.now

    def at(self, delay: float, fn: Callable, *args) -> None:
        """Call fn(*args) `delay` seconds from now, as an ordinary (NORMAL) SimPy event."""
        self.events += 1
        _Call(self.env, delay, simpy.events.NORMAL, fn, args)

    def late(self, fn: Callable, *args) -> None:
        """Call fn(*args) at the end of this instant, after every URGENT and NORMAL event due now."""
        self.events += 1
        _Call(self.env, 0.0, LATE_PRIORITY, fn, args)

    def run(self, until: float | None = None) -> None:
        """Run the environment (every process, and the network) until nothing is left or `until`."""
        self.env.run(until)


class SimPyNetwork:
    """zensim's network as SimPy events (module docstring): `send`, `receive`, `compute`, `replay`.
    `network` is the zensim.net.network.Network underneath (its per-message times, links, model)."""

    def __init__(self, env: simpy.Environment, costs: Costs, model: str = "fifo",
                 options: Mapping[str, object] | None = None) -> None:
        self.env = env
        self.network = Network(costs, model, options, clock=SimPyClock(env))
        self._boxes: dict[tuple[int, Hashable], tuple[simpy.Event, str]] = {}  # (dst, tag) -> arrival, who asked

    @property
    def now(self) -> float:
        """Simulated seconds (the environment's)."""
        return self.env.now

    def send(self, src: int, dst: int, nbytes: float, tag: Hashable | None = None) -> simpy.Event:
        """Send `nbytes` from GPU `src` to GPU `dst` now; an event that fires when the last byte has
        arrived, with the message id. With `tag`, `receive(dst, tag)` waits for the same arrival."""
        done = self.env.event()
        box = None if tag is None else self._box((dst, tag), "sent")

        def arrived(m: int) -> None:
            done.succeed(m)
            if box is not None:
                box.succeed(m)

        self.network.send(src, dst, nbytes, arrived)
        return done

    def receive(self, dst: int, tag: Hashable) -> simpy.Event:
        """The event of the arrival at GPU `dst` of the message sent with `tag` (sent already or not),
        its value the message id. A tag pairs one send with one receive; once both were made it may be
        used again (ValueError: a second receive, or send, of a pending tag)."""
        return self._box((dst, tag), "received")

    def _box(self, key: tuple[int, Hashable], side: str) -> simpy.Event:
        """The arrival event of `key`: made by whichever side asks first, handed to the other (and
        forgotten) when it asks."""
        pending = self._boxes.pop(key, None)
        if pending is None:
            box = self._boxes[key] = (self.env.event(), side)
            return box[0]
        box, first = pending
        if first == side:
            self._boxes[key] = pending
            raise ValueError(f"tag {key[1]!r} to GPU {key[0]} already {side} and not yet paired")
        return box

    def compute(self, host: int, seconds: float) -> simpy.Event:
        """`seconds` of one processor's local work on `host` (shared with Costs.host_cores, as the
        network's own clients' work is); an event that fires when it is done."""
        done = self.env.event()
        self.network.compute(host, seconds, done.succeed)
        return done

    def replay(self, log: MessageLog, gpu_of_rank: np.ndarray | None = None, host_of_rank: np.ndarray | None = None,
               work: WorkCost | None = None) -> simpy.Event:
        """Start every rank of `log` now as a zensim client (zensim.net.replay.LogReplay, its arguments);
        an event that fires when its last rank has ended, with the log's Timing."""
        done = self.env.event()
        client = LogReplay(self.network, log, gpu_of_rank, host_of_rank, work=work)
        client.on_done = lambda: done.succeed(client.timing())
        if log.num_stages:
            client.start()
        else:
            done.succeed(client.timing())
        return done
