"""zensim: capture, simulate and emulate sparse gradient synchronization (the ZEN design space)."""

__version__ = "0.1.0"
