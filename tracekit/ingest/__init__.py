"""Trace files in, one run in the store: detect (``detect``), convert (``convert``), copy
(``pipeline``, with one reader per format in ``readers``, mapped by ``parsers/*.toml``)."""
