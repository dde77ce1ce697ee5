"""The sparse-synchronization design space as rank-local stage programs, and the in-memory driver."""
