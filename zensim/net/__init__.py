"""Cluster topology, unit parsing, the discrete-event network engine, sharing models, closed forms."""
