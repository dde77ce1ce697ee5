"""Checks every capture workload must pass: `check_workload(name)` (tests/test_conformance.py runs it
over zensim.trace.capture.names.WORKLOADS)."""

from __future__ import annotations

import torch

from zensim.trace.capture.workloads import make_workload, workload_class


def _tensors(batch) -> list[torch.Tensor]:
    """A batch's tensors (a tensor, or a tuple or list of them)."""
    return list(batch) if isinstance(batch, (tuple, list)) else [batch]


def check_workload(name: str) -> None:
    """Builds through the registry under its own name; records parameters the model has; gives the
    same micro-batch for the same (step, worker) and another one for another worker; has a finite
    loss whose gradient reaches every recorded parameter."""
    cls = workload_class(name)
    assert cls.name == name, f"{name}: registered under another name ({cls.name})"
    workload = make_workload(name, 2, 0)
    params = dict(workload.model.named_parameters())
    recorded = workload.recorded()
    assert recorded and set(recorded) <= set(params), f"{name}: records parameters the model lacks"
    a, b, other = workload.batch(3, 1, 4), workload.batch(3, 1, 4), workload.batch(3, 2, 4)
    assert all(torch.equal(x, y) for x, y in zip(_tensors(a), _tensors(b))), f"{name}: batches not deterministic"
    assert not all(torch.equal(x, y) for x, y in zip(_tensors(a), _tensors(other))), f"{name}: workers share a batch"
    loss = workload.loss(workload.model, a)
    assert torch.isfinite(loss), f"{name}: loss is not finite"
    loss.backward()
    assert all(params[p].grad is not None for p in recorded), f"{name}: a recorded parameter gets no gradient"
