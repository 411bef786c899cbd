"""Prefill, decode and mixed steps: which phase every kernel served.

- ``markers``: engine step markers (``rules/_phase_markers.toml``) parsed per unique text;
- ``attribute``: kernel → step by launch-time containment on the launching thread (SQL);
- ``heuristics``: kernel-family signals (``rules/_phase_heuristics.toml``) for runs without
  markers, every result labelled ``heuristic``;
- ``stage``: ``attribute_phases(connection, run_id)``, markers first, heuristics otherwise.

User code marks its own steps with ``tracekit.mark.step``.
"""
