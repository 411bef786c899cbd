"""``tracekit.classify``: kernel names in, one classification per name out (``tracekit
classify``), without a trace."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from tracekit.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd


def classify(names: str | Iterable[str], *, arch: str | None = None,
             rules: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] = ()
             ) -> pd.DataFrame:
    """Classify kernel names: one row per name, in input order (op, path, weights,
    activations, accum, library, rule, confidence, evidence, reason). ``arch`` (``sm90``,
    ``sm120``, ``gfx942``) checks what the GPU can run; ``rules`` adds rule pack folders."""
    from tracekit.api import tables
    from tracekit.classifier import classify_names, load_ruleset

    given = [names] if isinstance(names, str) else list(names)
    if not all(isinstance(name, str) for name in given):
        raise UsageError("classify() takes kernel names (strings)")
    folders = [rules] if isinstance(rules, (str, os.PathLike)) else list(rules)
    results = classify_names(given, load_ruleset([Path(folder) for folder in folders]),
                             arch=arch)
    return tables.classifications(results)
