"""tracekit.ingest."""
