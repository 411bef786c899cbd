"""tracekit.capture."""
