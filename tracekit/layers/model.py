"""Value types of the layer attribution: what one piece of evidence says about a launch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tracekit.vocabulary import LAYER_SOURCES, LAYERS

#: how far each source is trusted, for the judgement (``layer_times.confidence``)
CONFIDENCE: dict[str, str] = {
    "module": "high", "nvtx": "high", "shapes": "medium", "kernel_name": "medium",
    "launch_count": "low", "inherited": "medium", "none": "low",
}
#: groups that are not one of the model's layer groups but a partial or missing answer
VAGUE = frozenset({"decoder_layers", "unknown"})


@dataclass(frozen=True)
class Call:
    """What one piece of evidence says: a layer group (None when it names none) and why."""

    layer: str | None
    source: str
    detail: str
    #: the evidence fits several layer groups (an unknown that says which)
    ambiguous: bool = False

    def __post_init__(self) -> None:
        assert self.source in LAYER_SOURCES, self.source
        assert self.layer is None or self.layer in LAYERS, self.layer

    @property
    def definite(self) -> bool:
        """Whether it names one of the model's layer groups (not decoder_layers/unknown)."""
        return self.layer is not None and self.layer not in VAGUE


def decide(calls: Sequence[Call]) -> Call:
    """The answer from calls given strongest source first: the strongest that names a layer
    group; else the strongest ``decoder_layers``; else ``unknown`` with every reason (its
    source the evidence that was ambiguous, else ``none``).

    A weaker source that names another group is recorded in the detail, never followed.
    """
    definite = [call for call in calls if call.definite]
    if definite:
        chosen = definite[0]
        others = [f"{call.source} says {call.layer}" for call in definite[1:]
                  if call.layer != chosen.layer]
        if others:
            return Call(chosen.layer, chosen.source,
                        f"{chosen.detail} ({'; '.join(others)}: the {chosen.source} "
                        "evidence is stronger)")
        return chosen
    partial = [call for call in calls if call.layer == "decoder_layers"]
    if partial:
        unsure = [call.detail for call in calls if call.ambiguous]
        if unsure:
            return Call(partial[0].layer, partial[0].source,
                        f"{partial[0].detail} ({'; '.join(unsure)})")
        return partial[0]
    reasons = "; ".join(call.detail for call in calls if call.detail)
    ambiguous = next((call.source for call in calls if call.ambiguous), "none")
    return Call("unknown", ambiguous, reasons or "no evidence of the layer",
                ambiguous=ambiguous != "none")
