"""Layer attribution: which layer group of the model each GEMM launch belongs to.

The verdict is judged per layer group (attention, MLP, MoE experts, router, lm_head, …,
``tracekit.vocabulary.LAYERS``), so every GEMM nanosecond needs a group, or ``unknown`` with
the reason. ``stage.attribute_layers`` writes the run's ``layer_times``.
"""
