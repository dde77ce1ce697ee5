"""The training iteration: per-layer profile, buckets, compression cost, the timeline, fusion strategies."""
