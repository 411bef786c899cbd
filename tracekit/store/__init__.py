"""The store: normalized runs, kernels, names, ranges, classifications and findings.

``open_store(url)`` is the only way in; it checks the schema revision and applies pending
migrations for writers.
"""

from tracekit.store.db import Store, default_store_url, open_store

__all__ = ["Store", "default_store_url", "open_store"]
