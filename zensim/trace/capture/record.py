"""What both capture paths share: one trace tensor per recorded parameter, and writing selections
(or, for a dense-gradient trace, the whole gradient before any selection).

A trace tensor is one parameter's flattened gradient (named after the parameter), not a DDP
bucket: buckets are an artefact of one DDP configuration (bucket size, rebuild after the first
iteration, parameter order), while a parameter is the same in every run and in both capture
paths. A workload may split a parameter into `LayerSpec`s (DeepFM: one layer per feature field).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import torch

from zensim.errors import ConfigError
from zensim.sparse.chunk import SparseChunk
from zensim.trace.capture.sparsify import Selection
from zensim.trace.format import LayerSpec, TensorSpec, TraceWriter


def tensor_specs(
    model: torch.nn.Module,
    names: Iterable[str] | None = None,
    layers: Mapping[str, Sequence[LayerSpec]] | None = None,
) -> list[TensorSpec]:
    """One TensorSpec per recorded parameter of `model` (all trainable ones if `names` is None)."""
    params = {name: p for name, p in model.named_parameters() if p.requires_grad}
    names = list(params) if names is None else list(names)
    unknown = [n for n in names if n not in params]
    if unknown:
        raise ConfigError(f"params: {unknown[0]!r} is not a trainable parameter of the model")
    layers = layers or {}
    return [TensorSpec(n, params[n].numel(), tuple(layers.get(n, ()))) for n in names]


def to_chunk(selection: Selection) -> SparseChunk:
    """The selected element ids and sent values, as a compact numpy chunk (float32 values)."""
    indices = selection.indices.detach().cpu()
    values = selection.sent.detach()[selection.indices].float().cpu()
    return SparseChunk(indices.numpy().astype("int64", copy=False), values.numpy())


def to_dense(grad: torch.Tensor) -> np.ndarray:
    """A flat gradient as a float32 numpy copy (the dense chunk of a dense-gradient trace)."""
    return grad.detach().flatten().float().cpu().numpy().copy()


Recorded = SparseChunk | np.ndarray  # what was sent (a chunk) or the whole gradient (dense)


def write_chunks(
    writer: TraceWriter, iteration: int, worker: int, chunks: Mapping[str, Recorded], values: bool
) -> None:
    """Write one worker's chunks of one iteration, one per tensor of the writer (values if asked;
    a dense gradient as a dense chunk)."""
    for spec in writer.tensors:
        chunk = chunks[spec.name]
        if isinstance(chunk, np.ndarray):
            writer.write_dense(iteration, worker, spec.name, chunk)
        else:
            writer.write(iteration, worker, spec.name, chunk.indices, chunk.values if values else None)
