#!/usr/bin/env bash
# Liger-Kernel's CI test command on one GPU host, with pytest's JUnit XML per test file, for the join
# `specmatrix pytest-audit TREE --junit h100=FOLDER` (docs/junit-join.md, "The proof on an H100").
#
# Its Makefile's `make test` is `python -m pytest --disable-warnings --ignore=test/convergence --ignore=test/cutedsl
# test/`; this runs the same selection one pytest process per file (8 at a time, --timeout 300), so that a file cut
# by a time limit leaves the others' XML (the slow test_grpo_loss.py with four xdist workers). `sample` runs only the first parametrized case of each test function of
# the two files too slow to run whole in one ten-minute call (test_fused_moe.py, test_swiglu.py).
#
# Usage, from this repository's root, with Liger-Kernel's tree at TREE (the results/liger-h100 run: ead96b61):
#   OUT=/tmp/out TREE=/path/to/Liger-Kernel bash ci/liger_h100_run.sh          # every file but the two slow ones
#   OUT=/tmp/out TREE=/path/to/Liger-Kernel bash ci/liger_h100_run.sh sample   # the two slow files, sampled
# The host needs torch, triton, transformers, pytest and pytest-timeout (pytest-xdist for `sample`); the package
# is imported from TREE/src. The tarball lands in $OUT.
set -u
OUT=${OUT:?set OUT to a folder for the tarball}
TREE=$(cd "${TREE:?set TREE to a Liger-Kernel checkout}" && pwd)
MODE=${1:-all}
SLOW=(test/transformers/test_fused_moe.py test/transformers/test_swiglu.py)
W=$(mktemp -d); mkdir -p "$W/junit" "$W/logs"
nvidia-smi -L | sed 's/ (UUID: .*)//' > "$W/gpu.txt" 2>&1
python -c "import sys, torch, triton, transformers; print(sys.version); print('torch', torch.__version__, 'cuda', torch.version.cuda); print('triton', triton.__version__); print('transformers', transformers.__version__)" > "$W/versions.txt" 2>&1
cd "$TREE" || exit 2
export PYTHONPATH="$TREE/src${PYTHONPATH:+:$PYTHONPATH}" W
if [ "$MODE" = sample ]; then
  for f in "${SLOW[@]}"; do
    n=$(echo "$f" | tr / _)
    python -m pytest --co -q -p no:cacheprovider -o log_cli=false "$f" 2>/dev/null | grep '::' > "$W/logs/$n.all"
    # the first case of each test function, in collection order
    awk '{ base = $0; sub(/\[.*/, "", base); if (!(base in seen)) { seen[base] = 1; print } }' "$W/logs/$n.all" > "$W/logs/$n.ids"
    mapfile -t ids < "$W/logs/$n.ids"
    timeout 400 python -m pytest --disable-warnings -p no:cacheprovider -q --timeout 200 -o log_cli=false -n 6 "${ids[@]}" \
      --junitxml="$W/junit/$n.xml" > "$W/logs/$n.log" 2>&1
    echo "$f rc=$? $(wc -l < "$W/logs/$n.ids") of $(wc -l < "$W/logs/$n.all") cases" >> "$W/rc.txt"
  done
else
  find test -name 'test_*.py' -not -path 'test/convergence/*' -not -path 'test/cutedsl/*' | sort \
    | grep -v -F -x -e "${SLOW[0]}" -e "${SLOW[1]}" > "$W/files.txt"
  start=$(date +%s)
  timeout "${TOTAL:-500}" xargs -P 8 -I{} sh -c 'f="{}"; n=$(echo "$f" | tr / _); x=""; [ "$f" = test/chunked_loss/test_grpo_loss.py ] && x="-n 4"; timeout 470 python -m pytest --disable-warnings -p no:cacheprovider -q --timeout 300 -o log_cli=false $x "$f" --junitxml="$W/junit/$n.xml" > "$W/logs/$n.log" 2>&1; echo "$f rc=$?" >> "$W/rc.txt"' < "$W/files.txt"
  echo "wall $(( $(date +%s) - start )) s" >> "$W/rc.txt"
fi
tar -czf "$OUT/liger-h100-$MODE.tar.gz" -C "$W" .
