"""Rendering results: text tables, CSV, JSON, Chrome-trace timelines, plots."""
