"""What both capture paths share: one trace tensor per recorded parameter, and writing selections.

A trace tensor is one parameter's flattened gradient (named after the parameter), not a DDP
bucket: buckets are an artefact of one DDP configuration (bucket size, rebuild after the first
iteration, parameter order), while a parameter is the same in every run and in both capture
paths. A workload may split a parameter into `LayerSpec`s (DeepFM: one layer per feature field).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

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


def write_chunks(
    writer: TraceWriter, iteration: int, worker: int, chunks: Mapping[str, SparseChunk], values: bool
) -> None:
    """Write one worker's chunks of one iteration, one per tensor of the writer (values if asked)."""
    for spec in writer.tensors:
        chunk = chunks[spec.name]
        writer.write(iteration, worker, spec.name, chunk.indices, chunk.values if values else None)
