"""tracekit from Python: runs, kernels, GEMM paths, phases and findings as pandas DataFrames.

The functions are also at the top of the package (``tracekit.analyze`` …), loaded on first
use so that ``import tracekit`` stays light. The same rules as the command line hold: every
error is a ``tracekit.TracekitError`` carrying the message and hint ``tracekit`` prints (never
``SystemExit``), and a failed call leaves the store as it was. Times are integer nanoseconds
(``*_ns``); names, ops, paths and phases are categoricals.

The two "NVFP4" checkpoints of ``examples/nvfp4_two_checkpoints`` (``example`` below, after
``python build.py`` there; ``tmp`` is any folder): the W4A4 checkpoint on an engine build
that silently fell back to Marlin.

>>> import tracekit
>>> store = tracekit.open_store(tmp / "tracekit.db")
>>> run = tracekit.analyze(example / "w4a4-fallback-marlin.sqlite",
...                        model=example / "checkpoints" / "w4a4", store=store,
...                        label="fallback")
>>> print(run.verdict[1])
decode: 100% of GEMM time ran weight_only (Marlin, BF16 math) although the checkpoint \
declares W4A4 NVFP4 and the RTX 5090 (sm120) computes FP4 natively — silent fallback.
>>> run.gemm_paths()
     phase         path  count   time_ns  share
0  prefill  weight_only     64  13440000    1.0
1   decode  weight_only   1536  24576000    1.0
>>> run.phases()[["phase", "steps", "gpu_ns", "gemm_ns"]]
     phase  steps    gpu_ns   gemm_ns
0  prefill      2  16416000  13440000
1   decode     48  31488000  24576000
>>> run.names()[["op", "path", "count", "total_ns"]]
          op         path  count  total_ns
0       gemm  weight_only   1600  38016000
1  attention         bf16    400   7488000
2      other      unknown    800   2400000
>>> run.findings()[["severity", "rule", "phase"]]
  severity             rule    phase
0    error  silent-fallback  prefill
1    error  silent-fallback   decode

Every kernel record, filtered in the database:

>>> decode = run.kernels(phase="decode", op="gemm", columns=["duration_ns", "path"])
>>> len(decode), int(decode["duration_ns"].sum())
(1536, 24576000)

The other checkpoint's build, which runs real FP4 GEMMs, side by side:

>>> fp4 = tracekit.analyze(example / "w4a4-cutlass-fp4.sqlite",
...                        model=example / "checkpoints" / "w4a4", store=store,
...                        label="cutlass-fp4")
>>> tracekit.diff(run, fp4).query("phase == 'decode'")[["path", "a_share", "b_share"]]
          path  a_share  b_share
4          fp4      0.0      1.0
5  weight_only      1.0      0.0
>>> store.runs()[["label", "kernels"]]
          label  kernels
id
1      fallback     2800
2   cutlass-fp4     4400
>>> store.run("latest") == fp4
True

Kernel names alone, without a trace:

>>> tracekit.classify(["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_"
...                    "warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"]
...                   )[["op", "path", "rule"]]
     op  path         rule
0  gemm  bf16  cublas-xmma
>>> store.close()

Layout of this package:

- ``store.py``   — ``open_store`` / ``RunStore``: the runs of a store, one run by selector
- ``run.py``     — ``Run``: one run's tables, records, figures and files
- ``tables.py``  — the small per-run tables (names, phases, GEMM paths, findings …)
- ``kernels.py`` — the kernel records, filtered in SQL (``columns.py``: their columns)
- ``frames.py``  — SQL rows streamed into typed pandas columns
- ``analyzing.py``, ``comparing.py``, ``classifying.py`` — ``analyze``, ``diff``, ``classify``
"""

from __future__ import annotations

from tracekit.api.analyzing import analyze
from tracekit.api.classifying import classify
from tracekit.api.columns import DEFAULT_KERNEL_COLUMNS, KERNEL_COLUMNS
from tracekit.api.comparing import compare, diff
from tracekit.api.run import Run
from tracekit.api.store import RunStore, open_store

__all__ = ["DEFAULT_KERNEL_COLUMNS", "KERNEL_COLUMNS", "Run", "RunStore", "analyze", "classify",
           "compare", "diff", "open_store"]
