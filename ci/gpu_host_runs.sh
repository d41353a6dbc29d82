#!/bin/bash
# The measured runs of docs/gpu.md and docs/performance.md on an offline GPU host with the device kit (.devkit).
# One mode per call; a mode's JIT caches live in /tmp/jit-<mode> for as long as the host stays up.
#   bash ci/gpu_host_runs.sh x2        # every GPU of the host: cold run, warm re-run, then the kernel bench (warm caches)
#   bash ci/gpu_host_runs.sh one       # GPU 0 only (CUDA_VISIBLE_DEVICES=0, -n 1): cold run
#   bash ci/gpu_host_runs.sh one-warm  # GPU 0 only: warm re-run over one's caches, then an import-time profile
#   bash ci/gpu_host_runs.sh probe     # small runs with and without the CPU tests and xdist, then the matrix without them
#   bash ci/gpu_host_runs.sh checks    # the contract mutation and the planted crash (every GPU)
#   bash ci/gpu_host_runs.sh smoke     # one check per level (python -m tools.gpu.smoke), then two sglang mutations small
#   bash ci/gpu_host_runs.sh full      # cold run, warm re-run, the mutation table (gpu-mutations), the no-contract run
#   bash ci/gpu_host_runs.sh verify-probe  # ci/probe_target_verify.py: target verify per request against the kit
#   bash ci/gpu_host_runs.sh one-shared    # GPU 0 shared by four workers: cold run, then the warm re-run
#   bash ci/gpu_host_runs.sh mutations-shared  # baseline and every sglang mutation, four workers on GPU 0
#   bash ci/gpu_host_runs.sh isolate       # one cell of each level, each in its own child process (after one-shared)
#   bash ci/gpu_host_runs.sh cold-mutations  # GPU 0 shared by four workers: the matrix cold, then the mutation table
#   bash ci/gpu_host_runs.sh apart-check   # target/draft apart cells (forked workers), cellrun target levels, mutations
#   bash ci/gpu_host_runs.sh measure       # cold, sealed + restored caches in a fresh tree, warm forked, warm plain
#   bash ci/gpu_host_runs.sh fork-check    # the target/draft cells: cold, warm plain, warm with forked workers
#   bash ci/gpu_host_runs.sh fork-warm     # the full matrix: cold, warm plain, warm forked (per run; per host, 4 and 8)
#   bash ci/gpu_host_runs.sh fork-host     # the full matrix cold, warm through the host's fork server, the apart mutations
#   bash ci/gpu_host_runs.sh cell-profile  # the full matrix cold, warm through the host's server, one group profiled
#   bash ci/gpu_host_runs.sh freeze-host   # the full matrix cold, then warm runs through a frozen and an unfrozen server
#   bash ci/gpu_host_runs.sh freeze-ab     # the full matrix cold, then warm runs through the server with and without the freeze
#   bash ci/gpu_host_runs.sh freeze-final  # the full matrix cold, three warm runs through the host's server, a CI shard
#   bash ci/gpu_host_runs.sh tree-ab       # the full matrix cold, then warm runs alternating this tree and an older one
#                                          # (its copy in .ab/old: `git archive REV | tar -x -C .ab/old`), each with its server;
#                                          # ORDER="new old new ..." sets the warm runs (default three of each, alternating)
#   bash ci/gpu_host_runs.sh restore-ci    # the CI job's path: cold through the host's server, every file the run wrote
#                                          # listed, the caches sealed, archived, every cache on the host wiped, the
#                                          # archive restored and checked, a new server, then warm runs (torch.compile's
#                                          # cache outcomes per worker in the clock lines), then a run over each
#                                          # empty cache WITHOUT names (default: inductor; also: sglang)
# Every step is time-boxed (BUDGET seconds in all, default 560); reports and logs are tarred into $OUT.
set -u
MODE=${1:-x2}
t0=$(date +%s)
source .devkit/activate.sh
export PYTHONPATH="$PWD:$PYTHONPATH" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; R=/tmp/res-$MODE; mkdir -p "$R" "$OUT"
nvidia-smi -L; nproc
caches() { export TRITON_CACHE_DIR=/tmp/jit-$1/triton FLASHINFER_WORKSPACE_BASE=/tmp/jit-$1/fi TORCHINDUCTOR_CACHE_DIR=/tmp/jit-$1/inductor \
  SGLANG_JIT_CACHE_DIR=/tmp/jit-$1/sglang; }
step() { # name timeout env... -- command
  local name=$1 to=$2; shift 2
  local lim=$(( ${BUDGET:-560} - ($(date +%s) - t0) )); [ $lim -gt "$to" ] && lim=$to
  [ $lim -lt 20 ] && { echo "skip $name (out of time)" | tee -a "$R/steps.txt"; return; }
  local s; s=$(date +%s%N)
  timeout -s INT $lim env "$@" > "$R/$name.log" 2>&1; local rc=$?
  printf "%-10s rc=%s wall_ms=%s fi_so=%s triton=%s\n" "$name" $rc $(( ($(date +%s%N) - s) / 1000000 )) \
    "$(find "$FLASHINFER_WORKSPACE_BASE" -name '*.so' 2>/dev/null | wc -l)" "$(ls "$TRITON_CACHE_DIR" 2>/dev/null | wc -l)" | tee -a "$R/steps.txt"
  tail -4 "$R/$name.log"
  # What is done so far comes back even when the call is cut short at its limit.
  cp "$R/steps.txt" "$OUT/steps-$MODE.txt"; (cd /tmp && tar czf "$OUT/results-$MODE.tgz" "res-$MODE")
}
G="python3 -m nox -s gpu --force-venv-backend none --"
# The mutation table's 25 hd128 graph cells and the tests that reach sglang's mutated modules.
MUTATION_CELLS=('--matrix-select=draft-{triton,trtllm_mha}-*-page{16,64}-hd128-gqa4-bf16-graph target-trtllm_mha-topk1-page64-hd128-*'
  -k 'runner or sglang_draft or target')
SGLANG_IMPORT="import time; t=time.perf_counter(); import torch; t1=time.perf_counter(); import sglang.srt.mem_cache.memory_pool, sglang.srt.layers.attention.attention_registry, sglang.srt.layers.attention.triton_backend, sglang.srt.layers.attention.trtllm_mha_backend, sglang.srt.speculative.frozen_kv_mtp_worker_v2, sglang.test.kits.attention_unittest.attention_methods.dense_attention; print(f'torch {t1-t:.1f} s, then the sglang draft path {time.perf_counter()-t1:.1f} s')"
# The draft cells with the target's backend set apart from the draft's.
APART='--matrix-select=draft-*-tgt_*'
PRELOAD_PROBE="import time; t=time.perf_counter(); from matrix.gpu.preload import PRELOAD, preload; from matrix.gpu.nvmlanswers import read_nvml, uniform; g = read_nvml(); known = isinstance(g, tuple); s = preload(PRELOAD, uniform(g) if known else None, len(g) if known else 0); print(g); print(s); print(f'preload {time.perf_counter()-t:.1f} s')"
# What runner detection costs in a process that has imported torch: CUDA's answers against NVML's, then detect().
DETECT_PROBE="import os, time; import torch; t = time.perf_counter(); from matrix.gpu.nvmlanswers import read_nvml; g = read_nvml(); t1 = time.perf_counter(); a = torch.cuda.is_available(); n = torch.cuda.device_count(); t2 = time.perf_counter(); c = torch.cuda.get_device_capability(0); t3 = time.perf_counter(); m = torch.cuda.get_device_name(0); t4 = time.perf_counter(); from matrix.core.detect import detect; f = detect(os.environ); t5 = time.perf_counter(); print(g, a, n, c, m); print(f'nvml {t1-t:.3f} s, is_available+device_count {t2-t1:.3f} s, capability {t3-t2:.3f} s, name {t4-t3:.3f} s, detect() after them {t5-t4:.3f} s')"
# Every JIT cache a run on this host may have written, default places too, and this tree's bytecode (restore-ci).
wipe_caches() {
  rm -rf /tmp/jit-w /tmp/torchinductor_* "$HOME/.cache/flashinfer" "$HOME/.cache/sglang" "$HOME/.triton" "$HOME/.nv" \
    .nox/.cache/pycache-gpu
}
# One fork server for the host (GPU 0), its import paid once before the runs that name it (SPECMATRIX_FORK_SERVER=$S).
S=/tmp/specmatrix-host.sock
host_server() {
  rm -f "$S" "$S.json"; local s0; s0=$(date +%s%N)
  CUDA_VISIBLE_DEVICES=0 python3 -m matrix.gpu.forkserver serve --socket "$S" > "$R/server.log" 2>&1 & SP=$!
  for _ in $(seq 240); do [ -f "$S.json" ] && break; kill -0 $SP 2>/dev/null || break; sleep 0.25; done
  echo "server-up  wall_ms=$(( ($(date +%s%N) - s0) / 1000000 )) ready=$([ -f "$S.json" ] && echo yes || echo no)" | tee -a "$R/steps.txt"
  cp "$S.json" "$R/fork-server-host.json" 2>/dev/null
}
# The same server started in the background (as a CI job's earlier step would), waited for before the runs that name it.
host_server_bg() {
  rm -f "$S" "$S.json"; HS0=$(date +%s%N)
  CUDA_VISIBLE_DEVICES=0 python3 -m matrix.gpu.forkserver serve --socket "$S" > "$R/server.log" 2>&1 & SP=$!
}
host_server_wait() {
  for _ in $(seq 240); do [ -f "$S.json" ] && break; kill -0 $SP 2>/dev/null || break; sleep 0.25; done
  echo "server-up  since_start_ms=$(( ($(date +%s%N) - HS0) / 1000000 )) ready=$([ -f "$S.json" ] && echo yes || echo no)" | tee -a "$R/steps.txt"
  cp "$S.json" "$R/fork-server-host.json" 2>/dev/null
}
# An A/B of warm runs through two host servers: the host's (as built) and a second one, `python3 -c CODE` (a patched
# server; SOCKET in CODE stands for its socket, /tmp/specmatrix-NAME.sock); the matrix runs cold while both preload.
ab_servers() {  # NAME CODE
  rm -rf /tmp/jit-w; caches w
  W=CUDA_VISIBLE_DEVICES=0; S2=/tmp/specmatrix-$1.sock; rm -f "$S2" "$S2.json"
  host_server_bg
  CUDA_VISIBLE_DEVICES=0 python3 -c "${2//SOCKET/$S2}" > "$R/server-$1.log" 2>&1 & SP2=$!
  step cold 270 $W $G --matrix-workers-per-gpu 4 --matrix-report "$R/cold.json"
  host_server_wait
  for _ in $(seq 120); do [ -f "$S2.json" ] && break; sleep 0.25; done; cp "$S2.json" "$R/fork-server-$1.json" 2>/dev/null
}
case "$MODE" in
  x2)
    rm -rf /tmp/jit-x2; caches x2
    step cold2 330 $G --matrix-report "$R/cold2.json"
    step warm2 120 $G --matrix-report "$R/warm2.json"
    step bench 240 python3 -m nox -s bench --force-venv-backend none -- --out "$R/bench" ;;
  one)
    rm -rf /tmp/jit-one; caches one
    step cold1 560 CUDA_VISIBLE_DEVICES=0 $G --matrix-report "$R/cold1.json" ;;
  one-warm)
    caches one
    step warm1 200 CUDA_VISIBLE_DEVICES=0 $G --matrix-report "$R/warm1.json"
    step import 60 CUDA_VISIBLE_DEVICES=0 python3 -X importtime -c "$SGLANG_IMPORT" ;;
  probe)  # where the fixed seconds of a run go: other tests vs worker shutdown; then the full matrix without them.
    # Recorded before the gpu session itself left tests/gpu/*_cpu.py out: now `small` and `small-nocpu` run the same.
    rm -rf /tmp/jit-x2; caches x2
    SMALL="--matrix-select=draft-{triton,trtllm_mha}-topk{1,4}-page16-hd128-gqa4-bf16-graph"
    NOCPU="--ignore-glob=tests/gpu/*_cpu.py"
    step small-cold 120 $G "$SMALL" --matrix-report "$R/small-cold.json"
    step small 90 $G "$SMALL" --matrix-report "$R/small.json"
    step small-nocpu 90 $G "$SMALL" "$NOCPU" --matrix-report "$R/small-nocpu.json"
    step small-noxd 90 CUDA_VISIBLE_DEVICES=0 $G "$SMALL" "$NOCPU" -n 0 --matrix-report "$R/small-noxd.json"
    step cold2n 300 $G "$NOCPU" --matrix-report "$R/cold2n.json"
    step warm2n 90 $G "$NOCPU" --matrix-report "$R/warm2n.json"
    step warm1n 90 CUDA_VISIBLE_DEVICES=0 $G "$NOCPU" --matrix-report "$R/warm1n.json" ;;
  checks)
    caches x2
    step mutation 60 SPECMATRIX_GPU_SIZING_PLANT=unexpanded-max-bs $G --matrix-select 'draft-{triton,trtllm_mha}-*-page16-hd128-gqa4-bf16-graph' --matrix-report "$R/mutation.json"
    step plant 60 SPECMATRIX_GPU_PLANT=illegal-address $G --matrix-select 'draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph' --matrix-report "$R/plant.json" ;;
  smoke)
    rm -rf /tmp/jit-x2; caches x2
    step smoke 300 python3 -m tools.gpu.smoke
    SMALL="--matrix-select=draft-{triton,trtllm_mha}-topk{1,4}-page16-hd128-gqa4-bf16-graph"
    step mutations 240 python3 -m tools.gpu.mutate --baseline --mutation runner-unexpanded-max-bs --mutation expand-tiles-seq-lens \
      --out "$R/mutations" -- tests/gpu --ignore-glob='tests/gpu/*_cpu.py' -p no:cacheprovider -p no:benchmark \
      -p matrix.plugin -W ignore::DeprecationWarning -W ignore::FutureWarning --matrix-runner auto "$SMALL" -k runner -n 2 ;;
  full)  # cold first (the main result), then the mutation table and the warm re-run over its caches
    rm -rf /tmp/jit-x2; caches x2
    step cold2 320 $G --matrix-report "$R/cold2.json"
    step mutations 150 python3 -m nox -s gpu-mutations --force-venv-backend none -- \
      "${MUTATION_CELLS[@]}"
    cp -r gpu-mutations "$R/" 2>/dev/null
    step warm2 75 $G --matrix-report "$R/warm2.json"
    step nocontract 25 python3 -m matrix.gpu.cellrun draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph --level sglang --sizing-plant unexpanded-max-bs --no-contract ;;
  verify-probe)  # sglang's target verify against the kit's reference, per request, over a grid (own caches)
    rm -rf /tmp/jit-probe; caches probe
    step probe 170 python3 ci/probe_target_verify.py --out "$R/probe.json" ;;
  one-shared)  # one GPU, four xdist workers sharing it (--matrix-workers-per-gpu 4): cold, then the warm re-run
    rm -rf /tmp/jit-one; caches one
    step cold1s 330 CUDA_VISIBLE_DEVICES=0 $G --matrix-workers-per-gpu 4 --matrix-report "$R/cold1s.json"
    step warm1s 150 CUDA_VISIBLE_DEVICES=0 $G --matrix-workers-per-gpu 4 --matrix-report "$R/warm1s.json" ;;
  mutations-shared)  # the mutation table with its baseline on GPU 0 shared by four workers (over one's caches)
    caches one
    step mutations 330 CUDA_VISIBLE_DEVICES=0 python3 -m nox -s gpu-mutations --force-venv-backend none -- --matrix-workers-per-gpu 4 \
      "${MUTATION_CELLS[@]}"
    cp -r gpu-mutations "$R/" 2>/dev/null ;;
  cold-mutations)  # one GPU, four workers: the whole matrix over empty JIT caches, then baseline and every mutation
    rm -rf /tmp/jit-one; caches one
    step cold1s 290 CUDA_VISIBLE_DEVICES=0 $G --matrix-workers-per-gpu 4 --matrix-report "$R/cold1s.json"
    step mutations 330 CUDA_VISIBLE_DEVICES=0 python3 -m nox -s gpu-mutations --force-venv-backend none -- --matrix-workers-per-gpu 4 \
      "${MUTATION_CELLS[@]}"
    cp -r gpu-mutations "$R/" 2>/dev/null ;;
  isolate)  # every level's cell in its own child process on the GPU (SPECMATRIX_GPU_ISOLATE=1), over one's caches
    caches one
    ONE_OF_EACH="--matrix-select=draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph target-triton-topk4-page16-hd128-dt4-gqa4-bf16-graph target-trtllm_mha-topk1-page64-hd128-dt4-gqa4-bf16-graph"
    step isolate 150 CUDA_VISIBLE_DEVICES=0 SPECMATRIX_GPU_ISOLATE=1 $G -n 1 "$ONE_OF_EACH" --matrix-report "$R/isolate.json" ;;
  apart-check)  # the draft cells with the target apart (forked workers), cellrun's target levels, the draft-backend mutations
    rm -rf /tmp/jit-one; caches one
    step import 90 CUDA_VISIBLE_DEVICES=0 python3 -c "$PRELOAD_PROBE"
    step cellrun-target 90 CUDA_VISIBLE_DEVICES=0 python3 -m matrix.gpu.cellrun target-trtllm_mha-topk1-page64-hd128-dt4-gqa4-bf16-graph --level target
    step cellrun-tsglang 90 CUDA_VISIBLE_DEVICES=0 python3 -m matrix.gpu.cellrun target-triton-topk4-page16-hd128-dt4-gqa4-bf16-graph --level target-sglang
    step apart 150 CUDA_VISIBLE_DEVICES=0 $G --matrix-fork-server --matrix-workers-per-gpu 4 "$APART" --matrix-report "$R/apart.json"
    cp gpu-report/fork-server.json "$R/" 2>/dev/null
    step mutations 200 CUDA_VISIBLE_DEVICES=0 python3 -m tools.gpu.mutate --baseline --mutation draft-backend-ignores-override \
      --mutation draft-runner-ignores-override --out "$R/mutations" -- tests/gpu -m gpu -p no:cacheprovider -p no:benchmark \
      -p matrix.plugin -W ignore::DeprecationWarning -W ignore::FutureWarning --matrix-runner auto "$APART" \
      --matrix-workers-per-gpu 4 -n 4 --dist loadgroup ;;
  measure)  # GPU 0, four workers: cold (fills the caches), seal + save + restore into a fresh tree, warm plain, warm forked
    rm -rf /tmp/jit-m; caches m
    W=CUDA_VISIBLE_DEVICES=0
    step cold 300 $W $G --matrix-workers-per-gpu 4 --matrix-report "$R/cold.json"
    python3 ci/gha_jit_cache.py key --runner 1-gpu-h200 --key-file "$R/key.json" | tee "$R/key.txt"
    python3 ci/gha_jit_cache.py seal --key-file "$R/key.json" "$TRITON_CACHE_DIR" "$FLASHINFER_WORKSPACE_BASE" | tee -a "$R/key.txt"
    # actions/cache save, then a fresh runner's restore: the directories go away and come back from the archive.
    tar cf /tmp/jit-m.tar -C /tmp jit-m && rm -rf /tmp/jit-m && tar xf /tmp/jit-m.tar -C /tmp
    python3 ci/gha_jit_cache.py verify --key-file "$R/key.json" "$TRITON_CACHE_DIR" "$FLASHINFER_WORKSPACE_BASE" | cut -c1-300 | tee -a "$R/key.txt"
    step restored 100 $W $G --matrix-workers-per-gpu 4 --matrix-report "$R/restored.json"
    step warm 90 $W $G --matrix-workers-per-gpu 4 --matrix-report "$R/warm.json"
    step warm-fork 90 $W $G --matrix-fork-server --matrix-workers-per-gpu 4 --matrix-report "$R/warm-fork.json"
    cp gpu-report/fork-server.json "$R/fork-server-warm.json" 2>/dev/null
    step import 40 $W python3 -c "$SGLANG_IMPORT"
    # A corrupt restore: one triton kernel file and one flashinfer module damaged; the check removes those two kernels.
    f=$(find "$TRITON_CACHE_DIR" -name '*.cubin' | head -1); [ -n "$f" ] && printf 'garbage' > "$f"
    f=$(find "$FLASHINFER_WORKSPACE_BASE" -name '*.so' -path '*page_size_16_head_dim_128_head_group_ratio_4*' | head -1); [ -n "$f" ] && printf 'garbage' > "$f"
    python3 ci/gha_jit_cache.py verify --key-file "$R/key.json" "$TRITON_CACHE_DIR" "$FLASHINFER_WORKSPACE_BASE" | cut -c1-600 | tee -a "$R/key.txt"
    step corrupt 80 $W $G --matrix-workers-per-gpu 4 '--matrix-select=draft-{triton,trtllm_mha}-*-page16-hd128-gqa4-bf16-*' --matrix-report "$R/corrupt.json" ;;
  fork-check)  # GPU 0, four workers, the target/draft cells: cold, warm plain, warm forked (the server's status kept)
    rm -rf /tmp/jit-one; caches one
    W=CUDA_VISIBLE_DEVICES=0
    step cold 150 $W $G --matrix-workers-per-gpu 4 "$APART" --matrix-report "$R/apart-cold.json"
    step warm 90 $W $G --matrix-workers-per-gpu 4 "$APART" --matrix-report "$R/apart-warm.json"
    step warm-fork 90 $W $G --matrix-fork-server --matrix-workers-per-gpu 4 "$APART" --matrix-report "$R/apart-warm-fork.json"
    cp gpu-report/fork-server.json "$R/fork-server.json" 2>/dev/null; cat "$R/fork-server.json" ;;
  fork-small)  # GPU 0, four workers, the triton draft trees with the target apart: cold, warm plain, warm forked
    rm -rf /tmp/jit-one; caches one
    W=CUDA_VISIBLE_DEVICES=0; SMALL='--matrix-select=draft-triton-tgt_*-topk4-*'
    step cold 60 $W $G --matrix-workers-per-gpu 4 "$SMALL" --matrix-report "$R/small-cold.json"
    step warm 50 $W $G --matrix-workers-per-gpu 4 "$SMALL" --matrix-report "$R/small-warm.json"
    step warm-fork 50 $W $G --matrix-fork-server --matrix-workers-per-gpu 4 "$SMALL" --matrix-report "$R/small-warm-fork.json"
    cp gpu-report/fork-server.json "$R/fork-server.json" 2>/dev/null ;;
  fork-warm)  # GPU 0: cold with four workers (fills the caches), warm plain, warm forked from a server started by the
    # run, then a server started once for the host (its import paid before the runs) serving warm runs of 4 and 8 workers
    rm -rf /tmp/jit-w; caches w
    W=CUDA_VISIBLE_DEVICES=0
    step cold 260 $W $G --matrix-workers-per-gpu 4 --matrix-report "$R/cold.json"
    step warm 100 $W $G --matrix-workers-per-gpu 4 --matrix-report "$R/warm.json"
    step warm-fork 100 $W $G --matrix-fork-server --matrix-workers-per-gpu 4 --matrix-report "$R/warm-fork.json"
    cp gpu-report/fork-server.json "$R/fork-server-run.json" 2>/dev/null
    host_server
    step warm-host 100 $W SPECMATRIX_FORK_SERVER=$S $G --matrix-fork-server --matrix-workers-per-gpu 4 --matrix-report "$R/warm-host.json"
    step warm-host8 100 $W SPECMATRIX_FORK_SERVER=$S $G --matrix-fork-server --matrix-workers-per-gpu 8 --matrix-report "$R/warm-host8.json"
    kill $SP 2>/dev/null; cat "$R/fork-server-run.json" | head -c 3000 ;;
  fork-host)  # GPU 0: cold with four workers, the host's fork server, warm runs through it, the draft-backend mutations
    rm -rf /tmp/jit-w; caches w
    W=CUDA_VISIBLE_DEVICES=0
    step cold 260 $W $G --matrix-workers-per-gpu 4 --matrix-report "$R/cold.json"
    host_server
    step warm-host 90 $W SPECMATRIX_FORK_SERVER=$S $G --matrix-fork-server --matrix-workers-per-gpu 4 --matrix-report "$R/warm-host.json"
    cp gpu-report/fork-server.json "$R/fork-server-run.json" 2>/dev/null
    step mutations 190 $W python3 -m tools.gpu.mutate --baseline --mutation draft-backend-ignores-override \
      --mutation draft-runner-ignores-override --out "$R/mutations" -- tests/gpu -m gpu -p no:cacheprovider -p no:benchmark \
      -p matrix.plugin -W ignore::DeprecationWarning -W ignore::FutureWarning --matrix-runner auto "$APART" \
      --matrix-workers-per-gpu 4 -n 4 --dist loadgroup
    step warm-host2 80 $W SPECMATRIX_FORK_SERVER=$S $G --matrix-fork-server --matrix-workers-per-gpu 4 --matrix-report "$R/warm-host2.json"
    kill $SP 2>/dev/null; head -c 4000 "$R/fork-server-host.json"; cat "$R/mutations/mutations.md" 2>/dev/null ;;
  cell-profile)  # GPU 0: cold with four workers while the host's server preloads, warm runs through it (GPU count
    # from NVML, then given), then one configuration group's cells in one process under cProfile (where a cell goes)
    rm -rf /tmp/jit-w; caches w
    W=CUDA_VISIBLE_DEVICES=0
    host_server_bg
    step cold 270 $W $G --matrix-workers-per-gpu 4 --matrix-report "$R/cold.json"
    host_server_wait
    step warm-host 80 $W SPECMATRIX_FORK_SERVER=$S $G --matrix-fork-server --matrix-workers-per-gpu 4 --matrix-report "$R/warm-host.json"
    step warm-host-gpus 80 $W SPECMATRIX_GPUS=1 SPECMATRIX_FORK_SERVER=$S $G --matrix-fork-server --matrix-workers-per-gpu 4 --matrix-report "$R/warm-host-gpus.json"
    kill $SP 2>/dev/null
    ONE_GROUP='--matrix-select=draft-{triton,trtllm_mha}-*-page16-hd128-gqa4-bf16-* target-*-page16-hd128-*-gqa4-bf16-*'
    PL=$(python3 -c "import importlib.metadata as m; print('' if any(e.value == 'matrix.plugin' for e in m.entry_points(group='pytest11')) else '-p matrix.plugin')")
    step profile 100 $W python3 -m cProfile -o "$R/profile.pstats" -m pytest tests/gpu -m gpu $PL -p no:cacheprovider \
      -p no:benchmark -W ignore::DeprecationWarning -W ignore::FutureWarning --matrix-runner auto "$ONE_GROUP" \
      --matrix-report "$R/profile.json" -q
    python3 -c "import pstats; p = pstats.Stats('$R/profile.pstats'); p.sort_stats('cumulative').print_stats(90); p.sort_stats('tottime').print_stats(40)" > "$R/profile.txt" 2>&1
    head -c 9000 "$R/profile.txt" ;;
  freeze-host)  # GPU 0: cold with four workers while two host servers preload: the server as built (its heap frozen
    # before it forks) and the same server with gc.freeze made a no-op; warm runs alternate between them, then one
    # shard through ci/gha_shard.py --fork-server (the CI job's path)
    ab_servers unfrozen "import gc, sys; gc.freeze = lambda: None; from matrix.gpu.forkserver import main; sys.exit(main(['serve', '--socket', 'SOCKET']))"
    for k in 1 2 3; do
      step warm-frozen$k 75 $W SPECMATRIX_FORK_SERVER=$S $G --matrix-fork-server --matrix-workers-per-gpu 4 --matrix-report "$R/warm-frozen$k.json"
      [ $k -lt 3 ] && step warm-unfrozen$k 75 $W SPECMATRIX_FORK_SERVER=$S2 $G --matrix-fork-server --matrix-workers-per-gpu 4 --matrix-report "$R/warm-unfrozen$k.json"
    done
    grep -h '"frozen_objects"' "$R/fork-server-host.json" "$R/fork-server-unfrozen.json"
    kill $SP $SP2 2>/dev/null ;;
  freeze-ab)  # GPU 0: cold with four workers while two host servers preload: the server as built and the same server
    # without freeze_preloaded_heap (the code before it); warm runs alternate between them (as many as the budget allows)
    ab_servers asbefore "import sys, matrix.gpu.forkserver as f; f.freeze_preloaded_heap = lambda: 0; sys.exit(f.main(['serve', '--socket', 'SOCKET']))"
    for k in 1 2; do
      step warm-frozen$k 60 $W SPECMATRIX_FORK_SERVER=$S $G --matrix-fork-server --matrix-workers-per-gpu 4 --matrix-report "$R/warm-frozen$k.json"
      step warm-asbefore$k 60 $W SPECMATRIX_FORK_SERVER=$S2 $G --matrix-fork-server --matrix-workers-per-gpu 4 --matrix-report "$R/warm-asbefore$k.json"
    done
    kill $SP $SP2 2>/dev/null ;;
  freeze-final)  # GPU 0: cold with four workers while the host's server preloads, three warm runs through it, then
    # the whole matrix as one shard the CI job's way (ci/gha_shard.py --fork-server, the server named in the env)
    rm -rf /tmp/jit-w; caches w
    W=CUDA_VISIBLE_DEVICES=0
    host_server_bg
    step cold 270 $W $G --matrix-workers-per-gpu 4 --matrix-report "$R/cold.json"
    host_server_wait
    for k in 1 2 3; do
      step warm-host$k 70 $W SPECMATRIX_FORK_SERVER=$S $G --matrix-fork-server --matrix-workers-per-gpu 4 --matrix-report "$R/warm-host$k.json"
    done
    step shard 70 $W NOX_DEFAULT_VENV_BACKEND=none SPECMATRIX_FORK_SERVER=$S python3 ci/gha_shard.py --shard 1 --runner 1-gpu-h200 \
      --select 'draft-* target-*' --workers 4 --reports "$R/shard" --fork-server -- --matrix-workers-per-gpu 4
    grep -h '"frozen_objects"' "$R/fork-server-host.json"; grep -h "fork server:" "$R/shard.log" | cut -c1-300
    kill $SP 2>/dev/null ;;
  tree-ab)  # GPU 0: cold with four workers while two host servers preload, this tree's and the older tree's (.ab/old,
    # run from its own directory with its own matrix package first on the path); warm runs alternate between the two
    [ -d .ab/old/matrix ] || { echo "no .ab/old tree"; exit 2; }
    rm -rf /tmp/jit-w; caches w
    W=CUDA_VISIBLE_DEVICES=0; OLD=$PWD/.ab/old; S2=/tmp/specmatrix-old.sock; rm -f "$S2" "$S2.json"
    # ci/worker_clock.py marks each process's start-up (-p worker_clock), in both trees' runs and servers alike
    mkdir -p /tmp/clock && cp ci/worker_clock.py /tmp/clock/ && export PYTHONPATH="/tmp/clock:$PYTHONPATH"
    OLDPATH="$OLD:/tmp/clock:${PYTHONPATH#"/tmp/clock:$PWD:"}"
    host_server_bg
    (cd "$OLD" && CUDA_VISIBLE_DEVICES=0 PYTHONPATH="$OLDPATH" python3 -m matrix.gpu.forkserver serve --socket "$S2") > "$R/server-old.log" 2>&1 & SP2=$!
    step cold 270 $W $G --matrix-workers-per-gpu 4 --matrix-report "$R/cold.json"
    host_server_wait
    for _ in $(seq 240); do [ -f "$S2.json" ] && break; kill -0 $SP2 2>/dev/null || break; sleep 0.25; done
    cp "$S2.json" "$R/fork-server-old.json" 2>/dev/null
    declare -A n=([new]=0 [old]=0)
    for arm in ${ORDER:-new old new old new old}; do  # the runs in this order, as many as the budget allows
      k=$(( ${n[$arm]} + 1 )); n[$arm]=$k
      if [ "$arm" = new ]; then
        step warm-new$k 60 $W SPECMATRIX_FORK_SERVER=$S SPECMATRIX_CLOCK="$R/clock-new$k.jsonl" $G --matrix-fork-server \
          --matrix-workers-per-gpu 4 -p worker_clock --matrix-report "$R/warm-new$k.json"
      else
        step warm-old$k 60 $W SPECMATRIX_FORK_SERVER=$S2 SPECMATRIX_CLOCK="$R/clock-old$k.jsonl" PYTHONPATH="$OLDPATH" bash -c \
          "cd '$OLD' && $G --matrix-fork-server --matrix-workers-per-gpu 4 -p worker_clock --matrix-report '$R/warm-old$k.json'"
      fi
    done
    python3 ci/worker_clock.py "$R"/clock-*.jsonl | tee "$R/clock.txt"
    grep -h '"frozen_objects"\|"total"' "$R/fork-server-host.json" "$R/fork-server-old.json"
    kill $SP $SP2 2>/dev/null ;;
  restore-ci)  # GPU 0, the CI job's path: cold through the host's server, the caches sealed, archived, every cache
    # on the host wiped (this tree's bytecode too: a CI checkout is fresh), restored and checked, a new server, the
    # run over the restored caches, warm runs; then a run over each cache WITHOUT names, emptied
    wipe_caches; caches w
    W=CUDA_VISIBLE_DEVICES=0; DIRS=("$TRITON_CACHE_DIR" "$FLASHINFER_WORKSPACE_BASE" "$TORCHINDUCTOR_CACHE_DIR" "$SGLANG_JIT_CACHE_DIR")
    mkdir -p /tmp/clock && cp ci/worker_clock.py /tmp/clock/ && export PYTHONPATH="/tmp/clock:$PYTHONPATH"
    step detect 60 $W python3 -c "$DETECT_PROBE"
    touch /tmp/restore-mark; sleep 1
    host_server_bg; host_server_wait
    step cold 280 $W SPECMATRIX_FORK_SERVER=$S SPECMATRIX_CLOCK="$R/clock-cold.jsonl" $G --matrix-fork-server \
      --matrix-workers-per-gpu 4 -p worker_clock --matrix-report "$R/cold.json"
    kill $SP 2>/dev/null; wait $SP 2>/dev/null
    # Every file the cold run wrote outside the results, by folder: what a restore must carry, and what it need not.
    timeout 60 find / \( -path /proc -o -path /sys -o -path /dev -o -path "$R" -o -path "$OUT" \) -prune \
      -o -type f -newer /tmp/restore-mark -print 2>/dev/null | awk -F/ '{print "/"$2"/"$3"/"$4}' | sort | uniq -c \
      | sort -rn | head -40 | sed "s|$PWD|.|" | tee "$R/written.txt"
    python3 ci/gha_jit_cache.py key --runner 1-gpu-h200 --key-file "$R/key.json" | tee "$R/key.txt"
    python3 ci/gha_jit_cache.py seal --key-file "$R/key.json" "${DIRS[@]}" | tee -a "$R/key.txt"
    tar cf /tmp/jit-w.tar -C /tmp jit-w && du -sh /tmp/jit-w.tar "${DIRS[@]}" | tee -a "$R/key.txt"
    wipe_caches
    tar xf /tmp/jit-w.tar -C /tmp
    python3 ci/gha_jit_cache.py verify --key-file "$R/key.json" "${DIRS[@]}" | cut -c1-300 | tee -a "$R/key.txt"
    host_server_bg; host_server_wait
    for run in ${RUNS:-restored warm1 warm2 warm3}; do
      step $run 70 $W SPECMATRIX_FORK_SERVER=$S SPECMATRIX_CLOCK="$R/clock-$run.jsonl" $G --matrix-fork-server \
        --matrix-workers-per-gpu 4 -p worker_clock --matrix-report "$R/$run.json"
    done
    # WITHOUT="inductor sglang": a run each over one empty cache (what a job that did not keep it paid on every run)
    declare -A empty_dir=([inductor]=TORCHINDUCTOR_CACHE_DIR [sglang]=SGLANG_JIT_CACHE_DIR)
    for cache in ${WITHOUT:-inductor}; do
      step no-$cache 90 $W SPECMATRIX_FORK_SERVER=$S SPECMATRIX_CLOCK="$R/clock-no-$cache.jsonl" \
        "${empty_dir[$cache]}=/tmp/jit-w/$cache-none" $G --matrix-fork-server --matrix-workers-per-gpu 4 -p worker_clock \
        --matrix-report "$R/no-$cache.json"
    done
    python3 ci/worker_clock.py "$R"/clock-*.jsonl > "$R/clock.txt"
    kill $SP 2>/dev/null ;;
  *) echo "unknown mode $MODE (x2, one, one-warm, probe, checks, smoke, full, verify-probe, one-shared, mutations-shared, isolate, cold-mutations, apart-check, measure, fork-check, fork-small, fork-warm, fork-host, cell-profile, freeze-host, freeze-ab, freeze-final, tree-ab, restore-ci)"; exit 2 ;;
esac
cp "$R/steps.txt" "$OUT/steps-$MODE.txt"; (cd /tmp && tar czf "$OUT/results-$MODE.tgz" "res-$MODE")
echo "total $(( $(date +%s) - t0 ))s"
