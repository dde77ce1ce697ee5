"""Hooks that time a model's training steps per parameter: the measurement behind a LayerProfile.

Two lines in any training script (the model, plus the optimizer for the step's time):

    from zensim.train import LayerRecorder
    recorder = LayerRecorder(model, optimizer)        # before training; CUDA events on a GPU
    ...train as usual...
    recorder.profile(warmup=5, workload="mine", batch_size=64).save("mine.layers.json")

Events per step, all from hooks (nothing in the training loop changes): the model's forward start
(forward pre-hook of the root module), every module with parameters of its own entering and leaving
forward, the start of the model's backward (a hook on the forward's output tensors), each
parameter's gradient becoming ready (`register_post_accumulate_grad_hook`), the end of backward
(a callback queued on the autograd engine) and the optimizer step (its step pre/post hooks).
Each event takes a mark of the recorder's clock. The same events can instead be written into a
torch.profiler trace as named annotations (`zensim.train.kineto.annotate`) and replayed from the
trace later (`zensim.train.kineto.import_trace`): the state machine below is fed either way.
Supported: one forward and one backward per step (no gradient accumulation), a model wrapped in
DistributedDataParallel (attach to `ddp.module`), forwards without backward in between (evaluation),
which are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from torch.utils._pytree import tree_flatten

from zensim.errors import ConfigError
from zensim.train.clocks import Clock, WallClock
from zensim.train.layers import LayerProfile, ParamTime, median_profile

_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float64: "float64"}


@dataclass(frozen=True)
class ParamInfo:
    """What the profile needs of a parameter besides times."""

    numel: int
    index: int
    dtype: str


@dataclass
class _Call:
    """One forward call of a module that owns parameters: its marks and the enclosing call."""

    module: str
    start: Any
    parent: int
    end: Any = None


@dataclass
class _Step:
    """The marks of one training step."""

    forward_start: Any
    calls: list[_Call] = field(default_factory=list)
    stack: list[int] = field(default_factory=list)
    forward_end: Any = None
    backward_start: Any = None
    ready: list[tuple[str, Any]] = field(default_factory=list)
    backward_end: Any = None
    optimizer_start: Any = None
    optimizer_end: Any = None


class StepEvents:
    """The per-step state machine: events in, steps of marks out, profile from the steps.

    `params`: name -> ParamInfo; `owned`: module name -> its own parameters (name, numel);
    `has_optimizer`: whether a step ends with the optimizer (else with the end of backward)."""

    def __init__(self, params: dict[str, ParamInfo], owned: dict[str, list[tuple[str, int]]],
                 has_optimizer: bool, clock: Clock) -> None:
        self.params = params
        self.owned = owned
        self.has_optimizer = has_optimizer
        self.clock = clock
        self.steps: list[_Step] = []
        self.step: _Step | None = None

    def forward_start(self, mark: Any) -> None:
        """The root module's forward begins: a new step (an open step without backward is dropped)."""
        step = self.step
        if step is not None and step.ready and self.has_optimizer and step.optimizer_end is None:
            raise ConfigError("layer recorder: a second forward and backward before the optimizer step "
                              "(gradient accumulation is not supported)")
        self.step = _Step(mark)

    def enter(self, module: str, mark: Any) -> None:
        """A module owning parameters starts its forward."""
        step = self.step
        if step is None or step.forward_end is not None:
            return
        step.calls.append(_Call(module, mark, step.stack[-1] if step.stack else -1))
        step.stack.append(len(step.calls) - 1)

    def leave(self, mark: Any) -> None:
        """The innermost open module call ends."""
        step = self.step
        if step is None or step.forward_end is not None or not step.stack:
            return
        step.calls[step.stack.pop()].end = mark

    def forward_end(self, mark: Any) -> None:
        """The root module's forward returned."""
        if self.step is not None:
            self.step.forward_end = mark

    def backward_start(self, mark: Any) -> bool:
        """The model's backward begins; True the first time in a step."""
        step = self.step
        if step is None or step.backward_start is not None:
            return False
        step.backward_start = mark
        return True

    def ready(self, name: str, mark: Any) -> None:
        """Parameter `name`'s gradient is ready."""
        step = self.step
        if step is not None and step.forward_end is not None:
            step.ready.append((name, mark))

    def backward_end(self, mark: Any) -> None:
        """The backward pass finished."""
        step = self.step
        if step is not None and step.backward_end is None:
            step.backward_end = mark
            if not self.has_optimizer:
                self._close()

    def optimizer_start(self, mark: Any) -> None:
        """The optimizer step begins."""
        if self.step is not None and self.step.backward_end is not None:
            self.step.optimizer_start = mark

    def optimizer_end(self, mark: Any) -> None:
        """The optimizer step ended: the step is complete."""
        step = self.step
        if step is not None and step.optimizer_start is not None:
            step.optimizer_end = mark
            self._close()

    def _close(self) -> None:
        if self.step is not None:
            self.steps.append(self.step)
            self.step = None

    # --- results -----------------------------------------------------------------------------------------

    def profile(self, warmup: int = 0, **meta: Any) -> LayerProfile:
        """Medians over the steps recorded after the first `warmup`; `meta` fills the profile's
        descriptive fields (kind, device, workload, batch_size, source, extra)."""
        steps = self.steps[warmup:]
        if not steps:
            raise ConfigError(f"layer recorder: {len(self.steps)} complete training steps recorded, "
                              f"none after the {warmup} warm-up steps")
        self.clock.settle()
        return median_profile(self._one(k + warmup, s, meta) for k, s in enumerate(steps))

    def _one(self, k: int, step: _Step, meta: dict[str, Any]) -> LayerProfile:
        """The profile of one step."""
        sec = self.clock.seconds
        seen = [name for name, _ in step.ready]
        missing = [name for name in self.params if name not in seen]
        if missing:
            raise ConfigError(f"layer recorder: parameter {missing[0]!r} got no gradient in step {k} "
                              "(parameters unused in backward are not supported)")
        if len(set(seen)) != len(seen):
            raise ConfigError("layer recorder: a gradient became ready twice in one step "
                              "(gradient accumulation is not supported)")
        backward_start = step.backward_start if step.backward_start is not None else step.forward_end
        forward = self._forward_shares(step)
        params, previous = [], backward_start
        for name, mark in step.ready:
            info = self.params[name]
            params.append(ParamTime(name, info.numel, info.index, forward.get(name, 0.0),
                                    max(sec(previous, mark), 0.0), info.dtype))
            previous = mark
        optimizer = sec(step.optimizer_start, step.optimizer_end) if step.optimizer_end is not None else 0.0
        return LayerProfile(tuple(params), forward_s=sec(step.forward_start, backward_start),
                            backward_tail_s=max(sec(previous, step.backward_end), 0.0), optimizer_s=optimizer, **meta)

    def _forward_shares(self, step: _Step) -> dict[str, float]:
        """Each parameter's share of its module's forward time (exclusive of child modules), by size."""
        sec = self.clock.seconds
        total = [sec(c.start, c.end) if c.end is not None else 0.0 for c in step.calls]
        exclusive = list(total)
        for c, t in zip(step.calls, total):
            if c.parent >= 0:
                exclusive[c.parent] -= t
        out: dict[str, float] = {}
        for c, t in zip(step.calls, exclusive):
            own = self.owned[c.module]
            size = sum(n for _, n in own)
            for name, n in own:
                out[name] = out.get(name, 0.0) + max(t, 0.0) * n / size
        return out


class LayerRecorder(StepEvents):
    """Times every training step of `model` per parameter, with `clock` (wall time by default);
    `every_optimizer`: time the step of any optimizer (torch's global step hooks), for a script whose
    optimizer the caller does not hold."""

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 clock: Clock | None = None, every_optimizer: bool = False) -> None:
        trainable = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
        if not trainable:
            raise ConfigError("layer recorder: the model has no trainable parameters")
        params = {name: ParamInfo(p.numel(), i, _DTYPES.get(p.dtype, "float32"))
                  for i, (name, p) in enumerate(trainable)}
        by_id = {id(p): name for name, p in trainable}
        owned = {}
        for mname, module in model.named_modules():
            own = [(by_id[id(p)], p.numel()) for p in module.parameters(recurse=False) if id(p) in by_id]
            if own:
                owned[mname] = own
        super().__init__(params, owned, optimizer is not None or every_optimizer, clock or WallClock())
        self.handles: list[Any] = []
        mark = self.clock.mark
        # the step starts before the root module's own enter hook and ends after its leave hook
        self.handles.append(model.register_forward_pre_hook(
            lambda *_: self.forward_start(mark("step")), prepend=True))
        for mname, module in model.named_modules():
            if mname in owned:
                label = f"enter::{mname}::" + ",".join(f"{n}:{k}" for n, k in owned[mname])
                self.handles.append(module.register_forward_pre_hook(
                    lambda *_, m=mname, label=label: self.enter(m, mark(label))))
                self.handles.append(module.register_forward_hook(lambda *_: self.leave(mark("leave"))))
        self.handles.append(model.register_forward_hook(self._forward_end_hook))
        for name, p in trainable:
            info = params[name]
            label = f"ready::{name}::{info.numel}::{info.index}::{info.dtype}"
            self.handles.append(p.register_post_accumulate_grad_hook(
                lambda _p, n=name, label=label: self.ready(n, mark(label))))
        if optimizer is not None or every_optimizer:
            pre = optimizer.register_step_pre_hook if optimizer is not None else register_optimizer_step_pre_hook
            post = optimizer.register_step_post_hook if optimizer is not None else register_optimizer_step_post_hook
            self.handles.append(pre(lambda *_: self.optimizer_start(mark("optimizer"))))
            self.handles.append(post(lambda *_: self.optimizer_end(mark("optimizer_end"))))

    def detach(self) -> None:
        """Remove every hook (the recorded steps stay)."""
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def _forward_end_hook(self, _module: torch.nn.Module, _args: Any, out: Any) -> None:
        self.forward_end(self.clock.mark("forward_end"))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.requires_grad:
                t.register_hook(self._backward_start_hook)

    def _backward_start_hook(self, _grad: torch.Tensor) -> None:
        if self.step is not None and self.step.backward_start is None:
            self.backward_start(self.clock.mark("backward"))
            torch.autograd.Variable._execution_engine.queue_callback(
                lambda: self.backward_end(self.clock.mark("backward_end")))
