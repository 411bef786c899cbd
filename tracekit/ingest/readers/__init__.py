"""Format readers: one module per reader named in a ``parsers/*.toml`` spec.

Each exposes ``ingest(ctx: IngestContext) -> SourceInfo`` (see ``tracekit.ingest.reader``).
Formats only an external tool can read are converted first: ``.nsys-rep`` and ``.qdstrm``
(specs with ``reader = "nsys_rep"`` / ``"qdstrm"``, no module here) by
``tracekit.ingest.convert`` into an SQLite export that ``nsys_sqlite`` reads; ``.ncu-rep``
inside ``ncu_csv`` itself, which has the installed ncu print the CSV it then reads.
"""
