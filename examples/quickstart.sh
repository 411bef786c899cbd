#!/usr/bin/env bash
# The README quick start: build the synthetic NVFP4 example (no GPU needed) and analyze the
# run that silently fell back from FP4x FP4 to Marlin (4-bit weights, BF16 math).
# The example's traces are made by tracekit's own fixture builder; see
# examples/nvfp4_two_checkpoints/build.py for how, and its README for the story.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
example="$here/nvfp4_two_checkpoints"
python "$example/build.py"
store=${TRACEKIT_STORE:-tracekit.db}
set -x
tracekit analyze "$example/w4a4-fallback-marlin.sqlite" \
    --model "$example/checkpoints/w4a4" --store "$store"
{ set +x; } 2>/dev/null
cat <<NEXT

Next:
  tracekit analyze $example/w4a4-fallback-marlin.sqlite --model $example/checkpoints/w4a4 --log $example/engine-fallback.log --store $store
                          # the engine's log line turns the silent fallback into an announced one
  tracekit analyze $example/w4a4-cutlass-fp4.sqlite --model $example/checkpoints/w4a4 --store $store
  tracekit analyze $example/w4a16-marlin.sqlite --model $example/checkpoints/w4a16 --store $store
  tracekit runs --store $store
  tracekit diff -2 -1 --store $store          # the last two runs side by side
  tracekit report latest --html report.html --store $store
NEXT
