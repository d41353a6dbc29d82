"""A table mapping a `runner_config` to a `runs-on` label, read from the repository (sglang's
`scripts/ci/runner_configs.yml`: `runner_configs: {1-gpu-small: {runs_on: 1-gpu-5090, ...}, ...}`).

sglang's `_pr-test-check-changes.yml` turns it into the `runs_on_map` output (`runner_configs.py --map`), with the
literal `$b200_runner` replaced by a label chosen at run time; the walker resolves that name from the labels the
workflows echo into `$GITHUB_OUTPUT`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from matrix.core.errors import ConfigError
from matrix.core.treefiles import read_tree_text
from matrix.schedule.files import in_repo
from matrix.schedule.yamldoc import load_yaml

CANDIDATES = ("scripts/ci/runner_configs.yml", "scripts/ci/runner_configs.yaml", ".github/runner_configs.yml")
MAX_CONFIGS = 1024


@dataclass(frozen=True, kw_only=True)
class RunnerConfigTable:
    """runner_config name -> runs-on label as written (`$name` marks a label chosen at run time)."""

    source: str
    runs_on: tuple[tuple[str, str], ...]

    @property
    def table(self) -> dict[str, str]:
        return dict(self.runs_on)


def find_table(root: Path) -> RunnerConfigTable | None:
    """The first candidate file under `root` that exists, parsed; None when there is none."""
    for relative in CANDIDATES:
        path = root / relative
        if path.is_file():
            if not in_repo(root, path):
                raise ConfigError(f"{relative}: a link to a file outside the repository; refusing to read it")
            return parse_table(read_tree_text(root, path, ConfigError), relative)
    return None


def parse_table(text: str, name: str) -> RunnerConfigTable:
    doc = load_yaml(text, name)
    if isinstance(doc, Mapping) and "runner_configs" in doc:
        doc = doc["runner_configs"]
    if not isinstance(doc, Mapping):
        raise ConfigError(f"{name}: expected a mapping of runner_config names (runner_configs: {{NAME: {{runs_on: LABEL}}}})")
    if len(doc) > MAX_CONFIGS:
        raise ConfigError(f"{name}: more than {MAX_CONFIGS} runner configs")
    out: list[tuple[str, str]] = []
    for key, value in doc.items():
        if str(key).startswith("_"):
            continue  # anchors' holder (`_anchors:`)
        label = value.get("runs_on") if isinstance(value, Mapping) else value
        if isinstance(label, str) and label:
            out.append((str(key), label))
    return RunnerConfigTable(source=name, runs_on=tuple(out))
