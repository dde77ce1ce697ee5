"""Emulation testbed: run zensim's stage programs for real over shaped links."""
