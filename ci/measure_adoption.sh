#!/bin/bash
# Wall time of the install and adoption steps (docs/adoption.md) in a fresh clone, with a distribution Python.
# Usage: ci/measure_adoption.sh [CHECKOUT] [PYTHON]   (defaults: this checkout, /usr/bin/python3); scratch under $TMPDIR.
# Needs git and a package index for pipx, uv and pre-commit (the machine's configured one).
set -uo pipefail
SRC=$(cd "${1:-$(dirname "$0")/..}" && pwd); PY=${2:-/usr/bin/python3}
T=$(mktemp -d "${TMPDIR:-/tmp}/measure-adoption.XXXXXX"); F=$T/fresh
export PIPX_HOME=$T/pipx PIPX_BIN_DIR=$T/bin UV_TOOL_DIR=$T/uv-tools UV_TOOL_BIN_DIR=$T/bin UV_CACHE_DIR=$T/uv-cache PIP_CACHE_DIR=$T/pip-cache
export PRE_COMMIT_HOME=$T/pre-commit SPECMATRIX_CACHE_DIR=$T/guards-cache
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.invalid GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.invalid
step() { local name=$1; shift; local s=$(date +%s.%N); "$@" > $T/$name.log 2>&1; local rc=$?; local e=$(date +%s.%N); printf '%-28s rc=%s %6.1f s\n' "$name" "$rc" "$(echo "$e - $s" | bc)"; }
START=$(date +%s.%N)
$PY --version
step clone git clone -q "$SRC" $F
cd $F
step tools-venv bash -c "$PY -m venv $T/tools && $T/tools/bin/pip install -q pipx uv==0.13.9 pre-commit"
export PATH=$T/bin:$T/tools/bin:$PATH
step pipx-install-checkout pipx install --python $PY .
step pipx-uninstall pipx uninstall specmatrix
step uv-tool-install-checkout uv tool install --python $PY .
step uv-tool-uninstall uv tool uninstall specmatrix
step uv-build uv build --python $PY
step pipx-install-wheel bash -c "pipx install --python $PY dist/specmatrix-0.1.0-py3-none-any.whl"
step specmatrix-version specmatrix --version
# adoption in a scratch repository: a registered suite and a workflow
P=$T/project; mkdir -p $P/test/registered $P/.github/workflows
cp $F/tests/guards/fixture_suite/attention/test_trtllm_mha_guard_fixed.py $P/test/registered/
printf 'on: pull_request\njobs:\n  b:\n    runs-on: 4-gpu-b200\n    steps:\n      - run: python3 run_suite.py --suite base-b-test-4-gpu-b200\n' > $P/.github/workflows/pr-test.yml
cd $P && git init -q
step guards-write-baseline specmatrix guards test/registered --workflows . --write-baseline guards-baseline.json
HOOK=$T/hook-repo; git clone -q $F $HOOK; REV=$(git -C $HOOK rev-parse HEAD)
sed -e "s|https://github.com/OWNER/specmatrix|$HOOK|" -e "s|rev: v0.1.0|rev: $REV|" $F/docs/examples/pre-commit-config.yaml > .pre-commit-config.yaml
step pre-commit-install pre-commit install
git add -A
step pre-commit-first-commit git commit -qm suite
sed -i 's/base-b-test-4-gpu-b200/stage-b-test-4-gpu-b200/' .github/workflows/pr-test.yml; git add .github/workflows/pr-test.yml
step pre-commit-refused-commit git commit -qm rename
tail -2 $T/pre-commit-refused-commit.log
git reset -q --hard  # the workflow as committed again: the action's audit below passes with the baseline
# the action's install step, with the distribution Python
ACTION=$F/action.yml python3 - <<'END' > $T/install-step.sh
import os, yaml; a = yaml.safe_load(open(os.environ["ACTION"]))
print(next(s for s in a["runs"]["steps"] if s["name"] == "Install specmatrix")["run"])
END
mkdir -p $T/runner-temp
step action-install-step env SPECMATRIX_PYTHON=$PY GITHUB_ACTION_PATH=$F RUNNER_TEMP=$T/runner-temp GITHUB_OUTPUT=$T/gh-output bash $T/install-step.sh
step action-audit env -C $P $T/runner-temp/specmatrix-action-venv/bin/python -I -m matrix guards test/registered --workflows . --baseline guards-baseline.json
# the plugin on the own matrix
cp -r $F/examples/own-matrix $T/own; cd $T/own
step plugin-venv bash -c "$PY -m venv .venv && .venv/bin/pip install -q $F/dist/specmatrix-0.1.0-py3-none-any.whl pytest"
step plugin-pytest env SPECMATRIX_DETECT='{"gpus": 0}' .venv/bin/pytest -q -p no:cacheprovider --matrix-runner auto --matrix-report out/cpu.json
step plugin-coverage .venv/bin/specmatrix coverage out/cpu.json --out out/coverage
tail -2 $T/plugin-coverage.log
printf '%-28s       %6.1f s\n' total "$(echo "$(date +%s.%N) - $START" | bc)"
rm -rf "$T"
