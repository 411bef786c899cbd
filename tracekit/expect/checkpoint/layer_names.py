"""Which layer group a module name speaks of: the words of ``rules/_layer_names.toml``.

Its own module because both the declaration per layer group (``layers.py``) and the model's
module list (``modules.py``) ask it, and ``layers.py`` builds on ``modules.py``.
"""

from __future__ import annotations

import re
from functools import cache

from tracekit.datafiles import load_table

LAYER_NAMES_FILE = "_layer_names.toml"

_REGEX_SYNTAX = re.compile(r"\.\*|\.\+|\\\.|[\^$()?+|\[\]]")


@cache
def _layer_words() -> tuple[tuple[str, re.Pattern[str]], ...]:
    rows = load_table(LAYER_NAMES_FILE).get("layer", [])
    return tuple((str(row["layer"]), re.compile(str(row["regex"]), re.IGNORECASE))
                 for row in rows)


def module_layer(name: str) -> str | None:
    """The layer group a module name or target pattern speaks of, or None when it names no
    single group (``Linear``, ``*``, a pattern over several)."""
    # a pattern's syntax (``re:.*mlp\\.experts.*$``) becomes separators between the words
    text = _REGEX_SYNTAX.sub(".", name.removeprefix("re:"))
    for layer, regex in _layer_words():
        if regex.search(text):
            return layer
    return None
