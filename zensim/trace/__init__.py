"""Gradient-index traces: the file format (writer, lazy reader), statistics and synthetic generator."""

from zensim.trace.format import SCHEMA_VERSION, LayerSpec, TensorSpec, Trace, TraceWriter, opened, trace_path

__all__ = ["SCHEMA_VERSION", "LayerSpec", "TensorSpec", "Trace", "TraceWriter", "opened"]
