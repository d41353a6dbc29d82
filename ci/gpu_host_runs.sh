#!/bin/bash
# The measured runs of docs/gpu.md on an offline GPU host with the device kit (.devkit):
#   bash ci/gpu_host_runs.sh x2   # 2 GPUs: cold, warm, mutation, planted crash, bench
#   bash ci/gpu_host_runs.sh x1   # 1 GPU: bench, then a cold run
# Every step is time-boxed (BUDGET seconds in all); results are tarred into $OUT.
set -u
MODE=${1:-x2}
t0=$(date +%s)
source .devkit/activate.sh
export PYTHONPATH="$PWD:$PYTHONPATH" TRITON_CACHE_DIR=/tmp/jit/triton FLASHINFER_WORKSPACE_BASE=/tmp/jit/fi
OUT=${OUT:-/tmp/out}; R=/tmp/res; mkdir -p $R $OUT
nvidia-smi -L; nproc
step() { # name timeout env... -- nox args
  local name=$1 to=$2; shift 2
  local lim=$(( ${BUDGET:-460} - ($(date +%s) - t0) )); [ $lim -gt $to ] && lim=$to
  [ $lim -lt 20 ] && { echo "skip $name (out of time)" | tee -a $R/steps.txt; return; }
  local s=$(date +%s%N)
  timeout -s INT $lim env "$@" > $R/$name.log 2>&1; local rc=$?
  printf "%-10s rc=%s wall_ms=%s fi_so=%s triton=%s\n" $name $rc $(( ($(date +%s%N) - s) / 1000000 )) \
    $(find /tmp/jit/fi -name '*.so' 2>/dev/null | wc -l) $(ls /tmp/jit/triton 2>/dev/null | wc -l) | tee -a $R/steps.txt
  tail -4 $R/$name.log
}
G="python3 -m nox -s gpu --force-venv-backend none --"
rm -rf /tmp/jit
if [ "$MODE" = x2 ]; then
  step cold2 330 $G -n 2 --matrix-report $R/cold2.json
  step warm2 120 $G -n 2 --matrix-report $R/warm2.json
  step mutation 45 SPECMATRIX_GPU_MUTATION=unexpanded-max-bs $G -n 2 --matrix-select 'draft-{triton,trtllm_mha}-*-page16-hd128-gqa4-bf16-graph' --matrix-report $R/mutation.json
  step plant 50 SPECMATRIX_GPU_PLANT=illegal-address $G -n 2 --matrix-select 'draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph' --matrix-report $R/plant.json
  step bench 90 python3 -m nox -s bench --force-venv-backend none -- --out $R/bench --flashinfer-select '' --select 'draft-{triton,trtllm_mha}-*-hd128-gqa4-bf16-graph'
fi
cp $R/steps.txt $OUT/; cd /tmp && tar czf $OUT/results-$MODE.tgz res
echo "total $(( $(date +%s) - t0 ))s"
