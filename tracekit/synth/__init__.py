"""Synthetic traces with real schemas, for tests, examples and benchmarks (no GPU needed)."""
