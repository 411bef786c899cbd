"""tracekit.capture: run a command under a profiler for ``tracekit audit``.

One module per concern:

* ``session``   — one capture from start to finish (plan → run → workload → stop → collect);
* ``backends``  — nsys / torch / cupti / ncu: tool checks, exact command lines, collecting;
* ``nsys``, ``ncu`` — the profilers' command lines and what they leave behind;
* ``torch_runner``, ``cupti_runner``, ``runner`` — in-process recorders around a Python program;
* ``engines``   — vLLM / SGLang / TRT-LLM / llama.cpp presets, as data;
* ``workload``  — an OpenAI-compatible load driver (standard library only);
* ``lifecycle``, ``procs`` — supervision: run folder, log tee, stop ladder, no leftovers.
"""
