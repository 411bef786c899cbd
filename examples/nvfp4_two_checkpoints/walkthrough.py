# %% [markdown]
# # Two "NVFP4" checkpoints, one RTX 5090 — in a notebook
#
# The story of this folder's README, told with tracekit's Python API: every table is a
# pandas DataFrame. The traces are **synthetic** (tracekit's own fixture builder, see
# `build.py`); the kernel names are real ones.
#
# Cells are `# %%` blocks: open this file in Jupyter (with jupytext), VS Code or PyCharm, or
# run it top to bottom with `python walkthrough.py`. The test suite does the latter.

# %%
from pathlib import Path

import tracekit

try:  # in a notebook, tables render as tables
    from IPython.display import display as show
except ImportError:  # a plain script prints them
    show = print

HERE = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()

# %% [markdown]
# Build the three runs and the two checkpoint declarations (a few seconds), and start from
# an empty store of our own beside them.

# %%
import runpy  # noqa: E402

runpy.run_path(str(HERE / "build.py"), run_name="__main__")
for stale in HERE.glob("walkthrough.db*"):
    stale.unlink()
store = tracekit.open_store(HERE / "walkthrough.db")
w4a4, w4a16 = HERE / "checkpoints" / "w4a4", HERE / "checkpoints" / "w4a16"

# %% [markdown]
# ## Three runs
#
# The W4A4 checkpoint (ModelOpt NVFP4: 4-bit weights *and* activations) on a build with the
# sm120 FP4 GEMM; the W4A16 checkpoint (4-bit weights only); and the W4A4 checkpoint again on
# a build without that GEMM (its engine log is analyzed at the end).

# %%
native = tracekit.analyze(HERE / "w4a4-cutlass-fp4.sqlite", model=w4a4, store=store,
                          label="w4a4-native")
by_design = tracekit.analyze(HERE / "w4a16-marlin.sqlite", model=w4a16, store=store,
                             label="w4a16")
fallback = tracekit.analyze(HERE / "w4a4-fallback-marlin.sqlite", model=w4a4, store=store,
                            label="w4a4-fallback")
for run in (native, by_design, fallback):
    print(f"run {run.id} ({run.info['label']}):")
    for sentence in run.verdict:
        print("  " + sentence)

# %%
show(store.runs()[["label", "gpu", "kernels", "verdict"]])

# %% [markdown]
# ## Where the GEMM time went
#
# Per phase and datatype path. Both "NVFP4" downloads fill the same file slots, but only one
# multiplies FP4 × FP4: the others run Marlin, 4-bit weights dequantized into BF16 math.

# %%
for run in (native, by_design, fallback):
    paths = run.gemm_paths()
    paths.insert(0, "run", run.info["label"])
    show(paths)

# %%
show(tracekit.diff(fallback, native))

# %% [markdown]
# ## What it costs
#
# The records themselves, filtered in the database: the decode GEMMs of each W4A4 run, and
# the GPU time per decode step (kernel records joined to their engine step).

# %%
for run in (native, fallback):
    gemms = run.kernels(phase="decode", op="gemm", columns=["name", "path", "duration_ns"])
    per_kernel = gemms.groupby(["path"], observed=True)["duration_ns"].agg(["count", "mean"])
    print(run.info["label"])
    show(per_kernel)

# %%
step_time = {}
for run in (native, fallback):
    kernels = run.kernels(phase="decode", columns=["step_id", "duration_ns"])
    step_time[run.info["label"]] = kernels.groupby("step_id")["duration_ns"].sum().mean()
print({label: f"{ns / 1e3:.0f} µs" for label, ns in step_time.items()})
slower = step_time["w4a4-fallback"] / step_time["w4a4-native"]
print(f"the fallback's decode steps take {slower:.2f}x the GPU time of the native FP4 ones")

# %% [markdown]
# ## The findings, with their evidence

# %%
findings = fallback.findings()
show(findings[["severity", "rule", "phase", "share"]])
for evidence in findings["evidence"].iloc[0]:
    print(evidence)

# %% [markdown]
# ## Each layer judged, and what the engine's log said
#
# The layer table (which layer groups ran which path, against what each declares on this
# GPU). Then the same trace with the engine log: vLLM printed one WARNING line announcing the
# Marlin path, so the fallback is no longer silent — a warning, not an error.

# %%
show(fallback.layers()[["phase", "layer", "declared", "expected", "ran", "share", "outcome"]])
logged = tracekit.analyze(HERE / "w4a4-fallback-marlin.sqlite", model=w4a4,
                          logs=[HERE / "engine-fallback.log"], store=store)
show(logged.findings()[["severity", "rule", "phase", "share"]])

# %% [markdown]
# ## Figures and files
#
# The HTML report's charts as plotly figures (shown when this is a notebook), and the report
# itself.

# %%
fallback.breakdown()

# %%
fallback.timeline(kernel_budget=2_000)

# %%
print(fallback.to_html(HERE / "walkthrough-report.html"))
store.close()
