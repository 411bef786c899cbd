"""Kernel families that serve one layer group only (``rules/_layer_kernels.toml``).

Grouped GEMMs are the MoE experts' (one matrix product per expert); a few families that the
classifier calls plain GEMMs are too (trtllm-gen's dynamic-batch ``bmm_``, Marlin's MoE build).
A row matches a name's classification by op, rule id and a name regex, each when given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from tracekit.datafiles import load_table, require
from tracekit.layers.model import Call

KERNELS_FILE = "_layer_kernels.toml"


@dataclass(frozen=True)
class KernelFamily:
    """One row: which classifications it matches, the group it gives and why."""

    layer: str
    op: str | None
    rule: str | None
    name: re.Pattern[str] | None
    why: str

    def matches(self, name: str, op: str | None, rule: str | None) -> bool:
        return ((self.op is None or self.op == op) and (self.rule is None or self.rule == rule)
                and (self.name is None or self.name.search(name) is not None))


@cache
def families() -> tuple[KernelFamily, ...]:
    """The table's rows, in file order."""
    rows = []
    for index, row in enumerate(load_table(KERNELS_FILE).get("kernel", [])):
        where = f"[[kernel]] {index + 1}"
        pattern = row.get("name")
        rows.append(KernelFamily(
            layer=str(require(row, "layer", KERNELS_FILE, where)), op=row.get("op"),
            rule=row.get("rule"), name=re.compile(str(pattern)) if pattern else None,
            why=str(require(row, "why", KERNELS_FILE, where))))
    return tuple(rows)


def kernel_call(name: str, op: str | None, rule: str | None) -> Call | None:
    """The group a kernel's family gives, or None when its family serves several groups."""
    for family in families():
        if family.matches(name, op, rule):
            what = f"op {op}" if family.op else f"rule {rule}" if family.rule else "its name"
            return Call(family.layer, "kernel_name",
                        f"kernel family ({what}): {family.why}")
    return None


def check_examples() -> tuple[int, list[str]]:
    """The table's examples, classified by the built-in rules (``tracekit rules test``)."""
    from tracekit.classifier import classify_names, load_ruleset

    ruleset = load_ruleset(use_env=False)
    count, failures = 0, []
    for row in load_table(KERNELS_FILE).get("kernel", []):
        names = [*row.get("examples", []), *row.get("not_examples", [])]
        results = classify_names(names, ruleset)
        wanted = [True] * len(row.get("examples", [])) + [False] * len(
            row.get("not_examples", []))
        for name, result, want in zip(names, results, wanted, strict=True):
            count += 1
            call = kernel_call(name, result.op, result.rule)
            got = call is not None and call.layer == row["layer"]
            if got != want:
                failures.append(f"{name[:80]!r} ({result.op}, {result.rule}): "
                                f"{'gives' if got else 'does not give'} {row['layer']}")
    return count, failures
