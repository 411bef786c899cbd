"""Module class chains → layer groups (``rules/_layer_modules.toml``).

A torch-profiler trace recorded with ``with_stack``/``with_modules`` wraps every module call
in a frame named ``nn.Module: <Class>_<n>``; the frames around a GEMM's launch, outermost
first, are its chain (``GptOssForCausalLM › TransformerBlock › MLPBlock › Linear``).
TensorRT-LLM's layer-wise benchmarks name NVTX ranges by class the same way. Each class has
a role (the table); the innermost frame with a deciding role decides, with the context the
table's header describes: a generic linear is what its container is (attention, MLP; the
router directly in a MoE block; lm_head directly in a causal LM), an MLP that holds experts
is a MoE block, an MLP inside a MoE block is an expert.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cache

from tracekit.datafiles import load_table, require
from tracekit.layers.model import Call

MODULES_FILE = "_layer_modules.toml"
ROLES = ("vision", "other", "lm_head", "embedding", "experts", "router", "moe_block",
         "attention", "mlp", "decoder", "causal_lm", "model", "linear")
#: roles that name a layer group by themselves
_GROUP_OF = {"lm_head": "lm_head", "embedding": "embedding", "experts": "moe_experts",
             "router": "moe_router", "attention": "attention"}
_INSTANCE = re.compile(r"_\d+$")
#: the Kineto name of a module frame
MODULE_PREFIX = "nn.Module: "


@cache
def _roles() -> tuple[tuple[str, re.Pattern[str]], ...]:
    rows = []
    for index, row in enumerate(load_table(MODULES_FILE).get("module", [])):
        where = f"[[module]] {index + 1}"
        role = str(require(row, "role", MODULES_FILE, where))
        rows.append((role, re.compile(str(require(row, "regex", MODULES_FILE, where)))))
    return tuple(rows)


@cache
def class_role(name: str) -> str | None:
    """The role of a module class (None: no row names it, the class is transparent)."""
    for role, regex in _roles():
        if regex.search(name):
            return role
    return None


def frame_class(text: str) -> str:
    """``nn.Module: QKVParallelLinear_12`` → ``QKVParallelLinear``."""
    return _INSTANCE.sub("", text.removeprefix(MODULE_PREFIX).strip())


def moe_mlp_classes(chains: Iterable[Sequence[str]]) -> frozenset[str]:
    """MLP classes whose frames hold experts frames somewhere in the run (gpt-oss
    ``MLPBlock``): MoE blocks under an MLP's name."""
    found = set()
    for chain in chains:
        roles = [class_role(name) for name in chain]
        for index, role in enumerate(roles):
            if role == "mlp" and "experts" in roles[index + 1:]:
                found.add(chain[index])
    return frozenset(found)


def chain_text(chain: Sequence[str], last: int = 4) -> str:
    """The innermost ``last`` classes, outermost first (``A › B › C``)."""
    shown = list(chain[-last:])
    return ("… › " if len(chain) > last else "") + " › ".join(shown)


def decide_chain(chain: Sequence[str], moe_mlps: frozenset[str], source: str) -> Call:
    """The layer group a chain of class names (outermost first) gives its launches."""
    where = f"{'module frames' if source == 'module' else 'layer ranges'} {chain_text(chain)}"
    roles = [class_role(name) for name in chain]
    if "vision" in roles:
        name = chain[roles.index("vision")]
        return Call("vision", source, f"{where}: inside {name}, the vision tower")
    linear: str | None = None
    for index in range(len(chain) - 1, -1, -1):
        name, role = chain[index], roles[index]
        if role == "mlp" and name in moe_mlps:
            role = "moe_block"
        if role is None or role == "other":
            continue
        if role in _GROUP_OF:
            return Call(_GROUP_OF[role], source, f"{where}: {name} is {_GROUP_OF[role]}")
        if role == "linear":
            linear = linear or name
            continue
        if role == "mlp":
            block = next((chain[i] for i in range(index) if roles[i] == "moe_block"
                          or chain[i] in moe_mlps), None)
            if block is not None:
                return Call("moe_experts", source, f"{where}: the MLP {name} inside the MoE "
                                                   f"block {block} is an expert")
            return Call("mlp", source, f"{where}: {name} is mlp")
        if role == "moe_block":
            if linear is not None:
                return Call("moe_router", source, f"{where}: a {linear} directly inside {name}, "
                                                  "which holds the experts, is the router")
            return Call(None, source, f"{where}: launched by {name} itself, outside its "
                                      "experts and router")
        if role == "decoder":
            return Call("decoder_layers", source, f"{where}: inside the decoder layer {name}, "
                                                  "outside any attention or MLP frame")
        if role == "causal_lm":
            if linear is not None:
                return Call("lm_head", source, f"{where}: a {linear} directly inside {name} is "
                                               "its output projection")
            return Call(None, source, f"{where}: inside {name}, outside its layers")
        if role == "model":
            return Call(None, source, f"{where}: inside {name}, outside its decoder layers")
    return Call(None, source, f"{where}: no frame of a known kind")


def check_examples() -> tuple[int, list[str]]:
    """The table's examples (``tracekit rules test``): how many, and what failed."""
    count, failures = 0, []
    for row in load_table(MODULES_FILE).get("module", []):
        for name in row.get("examples", []):
            count += 1
            if class_role(name) != row["role"]:
                failures.append(f"{name!r}: role {class_role(name)}, expected {row['role']}")
        for name in row.get("not_examples", []):
            count += 1
            if class_role(name) == row["role"]:
                failures.append(f"{name!r}: must not be {row['role']}")
    return count, failures
