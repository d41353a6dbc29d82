"""Suite names to runner profiles, the nightly convention, suite-map and suite-list files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matrix.core.errors import ConfigError, UsageError
from matrix.guards.model import Platform, Registration
from matrix.registered_suite import audit as suites
from matrix.registered_suite.audit import check_suite_map, load_suite_map, parse_suite_map, read_suite_list, target_of

# Real sglang suite names (test/registered, 2026-07) -> the profiles they run on.
MAPPING: list[tuple[Platform, str, tuple[str, ...]]] = [
    (Platform.CUDA, "base-b-test-4-gpu-b200", ("4-gpu-b200",)),
    (Platform.CUDA, "stage-b-test-1-gpu-large", ("1-gpu-h100",)),
    (Platform.CUDA, "base-b-kernel-unit-test-4-gpu-b200", ("4-gpu-b200",)),
    (Platform.CUDA, "base-b-kernel-benchmark-test-1-gpu-large", ("1-gpu-h100",)),
    (Platform.CUDA, "nightly-4-gpu-b200", ("4-gpu-b200",)),
    (Platform.CUDA, "base-c-test-deepep-8-gpu-h200", ("8-gpu-h200",)),
    (Platform.CUDA, "base-c-test-8-gpu-h200", ("8-gpu-h200",)),
    (Platform.CUDA, "base-c-test-8-gpu-h20", ("8-gpu-h20",)),
    (Platform.CUDA, "nightly-4-gpu-gb300-kimi-k25", ("4-gpu-gb300",)),
    (Platform.CUDA, "base-b-test-1-gpu-small", ("1-gpu-5090",)),
    (Platform.CUDA, "extra-a-test-2-gpu-large", ("2-gpu-h100",)),
    (Platform.CUDA, "base-c-test-4-gpu-h100", ("4-gpu-h100",)),
    (Platform.CUDA, "weekly-8-gpu-h200", ("8-gpu-h200",)),
    (Platform.CUDA, "nightly-1-gpu", ()),
    (Platform.CUDA, "stress", ()),
    (Platform.CUDA, "base-a-test-cpu", ()),
    (Platform.CPU, "base-a-test-cpu", ("cpu",)),
    (Platform.CPU, "base-b-test-cpu-arm64", ("cpu",)),
    (Platform.CPU, "default", ("cpu",)),
]


def reg(platform: Platform, suite: str, runner_config: str | None = None) -> Registration:
    return Registration(function="register_x_ci", platform=platform, line=1, source="", suite=suite, runner_config=runner_config)


@pytest.mark.parametrize(("platform", "suite", "profiles"), MAPPING, ids=[f"{p.value}:{s}" for p, s, _ in MAPPING])
def test_suite_names_map_to_profiles(runners, platform, suite, profiles):
    assert target_of(reg(platform, suite), load_suite_map(), runners).profiles == profiles


def _suffix_only(suite: str, configs) -> str | None:
    return next((c for c in configs if suite.endswith(c)), None)


def _first_substring(suite: str, configs) -> str | None:
    # Depends on table order: 8-gpu-h20 is a substring of 8-gpu-h200.
    return next((c for c in sorted(configs) if c in suite), None)


@pytest.mark.parametrize(
    ("planted", "caught"),
    [(_suffix_only, "nightly-4-gpu-gb300-kimi-k25"), (_first_substring, "base-c-test-8-gpu-h200")],
    ids=["suffix-only", "first-substring"],
)
def test_planted_matching_bug_turns_a_mapping_red(monkeypatch, runners, planted, caught):
    monkeypatch.setattr(suites, "longest_config_in", planted)
    wrong = [s for p, s, want in MAPPING if target_of(reg(p, s), load_suite_map(), runners).profiles != want]
    assert caught in wrong


def test_runner_config_of_a_stage_registration_wins(runners):
    target = target_of(reg(Platform.CUDA, "base-b-test-1-gpu-small", "1-gpu-small"), load_suite_map(), runners)
    assert target.profiles == ("1-gpu-5090",)
    assert "runner_config 1-gpu-small" in target.how


def test_suite_map_file_overrides_exact_then_glob(runners, tmp_path: Path):
    path = tmp_path / "map.toml"
    path.write_text(
        '[suite]\n"nightly-1-gpu" = ["1-gpu-h200"]\n"nightly-8-gpu-*" = "8-gpu-h200"\n"base-b-test-4-gpu-b200" = ["8-gpu-b200"]\n',
        encoding="utf-8",
    )
    suite_map = load_suite_map(path)
    check_suite_map(suite_map, runners)
    assert target_of(reg(Platform.CUDA, "nightly-1-gpu"), suite_map, runners).profiles == ("1-gpu-h200",)
    assert target_of(reg(Platform.CUDA, "nightly-8-gpu-common"), suite_map, runners).profiles == ("8-gpu-h200",)
    assert target_of(reg(Platform.CUDA, "base-b-test-4-gpu-b200"), suite_map, runners).profiles == ("8-gpu-b200",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[suite]\nx = 3\n", "expected a profile name"),
        ("[suites]\n", "unknown key 'suites'"),
        ("[schedule]\nnightly_prefixes = 'nightly-'\n", "list of non-empty strings"),
        ("[suite\n", "malformed TOML"),
    ],
)
def test_bad_suite_map_files_are_config_errors(tmp_path: Path, text, message):
    path = tmp_path / "map.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_suite_map(path)


def test_suite_map_naming_an_unknown_profile_is_an_error(runners):
    bad = parse_suite_map({"suite": {"nightly-1-gpu": ["1-gpu-a100"]}}, "map.toml")
    with pytest.raises(ConfigError, match="unknown runner profile '1-gpu-a100'"):
        check_suite_map(bad, runners)


@pytest.mark.parametrize(
    ("suite", "nightly_only"), [("nightly-1-gpu", True), ("weekly-8-gpu-h200", True), ("base-a-test-cpu", False)]
)
def test_nightly_prefixes(suite, nightly_only):
    assert load_suite_map().is_nightly_only(suite) is nightly_only


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("suites.txt", "# suites CI runs\nbase-b-test-4-gpu-b200\n\nnightly-4-gpu-b200  # nightly\n"),
        ("suites.json", json.dumps(["base-b-test-4-gpu-b200", "nightly-4-gpu-b200"])),
        ("suites.json", json.dumps({"suites": ["base-b-test-4-gpu-b200", "nightly-4-gpu-b200"]})),
        ("suites.toml", 'suites = ["base-b-test-4-gpu-b200", "nightly-4-gpu-b200"]\n'),
    ],
)
def test_suite_list_formats(tmp_path: Path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert read_suite_list(path) == {"base-b-test-4-gpu-b200", "nightly-4-gpu-b200"}


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("missing.txt", None, "cannot read"),
        ("empty.txt", "# nothing\n", "no suite names"),
        ("bad.json", "[1, 2", "malformed JSON"),
        ("numbers.json", "[1, 2]", "expected a list of suite names"),
        ("bad.toml", "suites = [", "malformed TOML"),
        ("other.toml", "names = ['a']", "expected a list of suite names"),
    ],
)
def test_bad_suite_lists_are_usage_errors(tmp_path: Path, name, text, message):
    path = tmp_path / name
    if text is not None:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError, match=message):
        read_suite_list(path)
