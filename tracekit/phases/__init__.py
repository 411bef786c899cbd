"""tracekit.phases."""
