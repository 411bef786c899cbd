"""Format readers: one module per reader named in a ``parsers/*.toml`` spec.

Each exposes ``ingest(ctx: IngestContext) -> SourceInfo`` (see ``tracekit.ingest.reader``).
Readers that need an external tool first (``nsys_rep``, ``qdstrm``) live in
``tracekit.ingest.convert`` instead and hand over a file another reader understands.
"""
