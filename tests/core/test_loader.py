"""The matrix and runner files: shape of the default data and every bad-input case."""

from __future__ import annotations

import re

import pytest

from matrix.core.errors import ConfigError
from matrix.core.loader import load_matrix, load_runners, parse_matrix, parse_runners, read_toml

MINIMAL = """
name = "mini"
[pins]
flashinfer = "0.7.2"
[[axis]]
name = "backend"
values = ["triton", "trtllm_mha"]
[[axis]]
name = "topk"
values = [1, 2]
id = "topk{}"
[[group]]
name = "all"
backend = ["triton", "trtllm_mha"]
topk = [1, 2]
[[rule]]
id = "needs-gpu"
kind = "hardware"
reason = "needs a GPU"
source = "test"
require = { gpus = { ge = 1 } }
"""


def parse(text: str):
    return parse_matrix(read_toml(text, "m.toml"), "m.toml")


def test_minimal_matrix_expands_product():
    m = parse(MINIMAL)
    assert [c.id for c in m.cells] == ["triton-topk1", "triton-topk2", "trtllm_mha-topk1", "trtllm_mha-topk2"]
    assert m.cells[1].topk == 2
    assert m.cells[1].backend == "triton"


def test_cell_attribute_access_rejects_unknown_axis():
    cell = parse(MINIMAL).cells[0]
    with pytest.raises(AttributeError, match="no axis 'page_size'"):
        _ = cell.page_size


def test_default_matrix_axes_and_ids(default_matrix):
    assert [a.name for a in default_matrix.axes] == [
        "role", "backend", "target_backend", "topk", "page_size", "head_dim", "num_draft_tokens", "gqa", "dtype", "mode"
    ]  # fmt: skip
    ids = {c.id for c in default_matrix.cells}
    assert "draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph" in ids
    assert "target-trtllm_mha-topk1-page64-hd512-dt5-gqa4-bf16-graph" in ids
    assert "draft-trtllm_mha-tgt_triton-topk4-page16-hd128-gqa4-bf16-graph" in ids  # the target's backend set apart


def test_default_rules_all_have_reason_and_source(default_matrix):
    for rule in default_matrix.rules:
        assert rule.reason and rule.source


@pytest.mark.parametrize(
    "name",
    [
        "cpu",
        "1-gpu-h100",
        "1-gpu-h200",
        "2-gpu-h200",
        "4-gpu-h100",
        "4-gpu-b200",
        "8-gpu-h200",
        "8-gpu-b200",
        "1-gpu-5090",
        "4-gpu-gb300",
    ],
)
def test_required_runner_profiles_exist(runners, name):
    assert name in runners


def test_user_runner_file_adds_and_overrides(tmp_path):
    extra = tmp_path / "mine.toml"
    extra.write_text('[runner.my-box]\ngpus = 2\ncapability = [12, 0]\n[runner.cpu]\ngpus = 0\nlabels = ["self-hosted"]\n')
    runners = load_runners([extra], replace=["cpu"])
    assert runners["my-box"].sm == 120
    assert runners["cpu"].labels == ("self-hosted",)
    assert "4-gpu-b200" in runners


def test_user_runner_file_reusing_a_builtin_name_is_an_error(tmp_path):
    """A --runners file once silently replaced 4-gpu-b200 (4 GPUs, sm100) with 2 GPUs, sm80."""
    extra = tmp_path / "mine.toml"
    extra.write_text("[runner.4-gpu-b200]\ngpus = 2\ncapability = [8, 0]\n")
    with pytest.raises(ConfigError, match=r"runner '4-gpu-b200' is already a built-in profile.*--replace-runner 4-gpu-b200"):
        load_runners([extra])
    assert load_runners([extra], replace=["4-gpu-b200"])["4-gpu-b200"].gpus == 2
    with pytest.raises(ConfigError, match="--replace-runner 9-gpu-x: no runner profile of that name"):
        load_runners([extra], replace=["4-gpu-b200", "9-gpu-x"])


BAD_MATRICES = [
    ("name = 'x'\n[[axis]\nname='a'", "malformed TOML"),
    ("bogus = 1\n" + MINIMAL, "unknown key 'bogus'"),
    (
        MINIMAL.replace('backend = ["triton", "trtllm_mha"]\ntopk', 'backend = ["triton", "cutlass"]\ntopk'),
        "unknown backend value 'cutlass'",
    ),
    (
        MINIMAL.replace("require = { gpus", "when = { page_size = { in = [16] } }\nrequire = { gpus"),
        "no axis or runner fact named 'page_size'",
    ),
    (MINIMAL.replace("require = { gpus = { ge = 1 } }", "require = { topk = { gt = 2 } }"), "contradictory conditions"),
    (MINIMAL.replace("require = { gpus = { ge = 1 } }", "require = { gpus = { ge = 4, lt = 2 } }"), "contradictory conditions"),
    (MINIMAL.replace("require = { gpus = { ge = 1 } }", "require = { topk = { in = [3] } }"), "unknown topk value 3"),
    (MINIMAL.replace("require = { gpus = { ge = 1 } }", "require = { gpus = { about = 1 } }"), "unknown operator 'about'"),
    (MINIMAL.replace('kind = "hardware"', 'kind = "vibes"'), "unknown kind 'vibes'"),
    (MINIMAL.replace("require = { gpus = { ge = 1 } }", ""), "can never skip anything"),
    (MINIMAL.replace("require = { gpus = { ge = 1 } }", 'versions = { flashinfer = "=>0.6" }'), "invalid version specifier"),
    (
        MINIMAL + '[[rule]]\nid = "needs-gpu"\nkind = "hardware"\nreason = "r"\nsource = "s"\nrequire = { gpus = { ge = 2 } }\n',
        "rule id 'needs-gpu' used twice",
    ),
    (MINIMAL.replace('name = "all"\n', 'name = "all"\ncolour = ["red"]\n'), "unknown axis 'colour'"),
    (
        MINIMAL.replace(
            '[[group]]\nname = "all"\nbackend = ["triton", "trtllm_mha"]\ntopk = [1, 2]\n',
            '[[group]]\nname = "all"\nbackend = ["triton"]\n',
        ),
        "does not set axis 'topk'",
    ),
    (MINIMAL.replace('id = "topk{}"', 'id = "topk"'), "must contain '{}' exactly once"),
    (
        MINIMAL
        + '[[impl]]\nbackend = "trtllm_mha"\nsm = [90]\nimpl = "xqa"\nsource = "s"\n[[impl]]\nbackend = "trtllm_mha"\nsm = [90]\nimpl = "gen"\nsource = "s"\n',
        "contradictory impl entries",
    ),
    (MINIMAL.replace("require = { gpus = { ge = 1 } }", 'require = { impl = { in = ["xqa"] } }'), "no [[impl]] is named 'xqa'"),
    (MINIMAL.replace('name = "backend"', 'name = "sm"').replace("backend = [", "sm = ["), "reserved for a runner fact"),
    ('name = "x"\n[[axis]]\nname = "a"\nvalues = [1]\n', "no [[group]] defined"),
]


@pytest.mark.parametrize(("text", "message"), BAD_MATRICES, ids=[m for _, m in BAD_MATRICES])
def test_bad_matrix_is_one_clear_error(text, message):
    with pytest.raises(ConfigError) as info:
        parse(text)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_malformed_toml_names_file_and_line(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text('name = "x"\n\n[[axis]\n')
    with pytest.raises(ConfigError, match=r"broken\.toml: malformed TOML: .*line 3"):
        load_matrix(path)


def test_missing_matrix_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_matrix(tmp_path / "nope.toml")


BAD_RUNNERS = [
    ("[runner.x]\ngpus = -1\ncapability = [9, 0]\n", "gpus must be a non-negative integer"),
    ("[runner.x]\ngpus = 1\n", "needs a capability"),
    ("[runner.x]\ngpus = 1\ncapability = [9]\n", "capability must be [major, minor]"),
    ("[runner.x]\ngpus = 0\ncapability = [9, 0]\n", "capability given but gpus = 0"),
    ("[runner.x]\ngpus = 1\ncapability = [9, 0]\nskip_policy = 'loose'\n", "skip_policy must be"),
    ("[runner.x]\ngpus = 1\ncapability = [9, 0]\narch = 'hopper'\n", "unknown key 'arch'"),
    ("[runners.x]\ngpus = 1\n", "unknown key 'runners'"),
    ("", "no [runner.NAME] tables"),
]


@pytest.mark.parametrize(("text", "message"), BAD_RUNNERS, ids=[m for _, m in BAD_RUNNERS])
def test_bad_runner_file_is_one_clear_error(text, message):
    with pytest.raises(ConfigError) as info:
        parse_runners(read_toml(text, "r.toml"), "r.toml")
    assert message in str(info.value)


OWN = """
name = "own"
[[axis]]
name = "model"
values = ["a", "b"]
[[axis]]
name = "seqlen"
values = [1, 2]
id = "s{}"
[[group]]
name = "g"
model = ["a", "b"]
seqlen = [1, 2]
"""


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('[coverage]\nrows = ["modle"]\n', "[coverage]: rows: no axis named 'modle' (axes: model, seqlen)"),
        ('[coverage]\nrows = ["model"]\ncolumns = ["model"]\n', "[coverage]: axis 'model' named twice"),
        ("[coverage]\nrows = []\n", "[coverage]: rows: name at least one axis"),
        ("[cost.backend.x]\ncell_seconds = 1\n", "[cost.backend.*] tables need an axis named 'backend'"),
        ("[cost]\nconfig_axes = ['gqa']\n", "config_axes names unknown axis 'gqa'"),
    ],
)
def test_coverage_and_cost_tables_of_an_own_matrix_are_checked(extra, message):
    import tomllib

    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_matrix(tomllib.loads(OWN + extra), "own.toml")


def test_an_own_matrix_without_coverage_or_cost_gets_the_defaults():
    import tomllib

    m = parse_matrix(tomllib.loads(OWN), "own.toml")
    assert (m.layout.rows, m.layout.columns) == (("model",), ("seqlen",))
    assert (m.cost.default.cell_seconds, m.cost.default.compile_seconds, m.cost.shard_seconds) == (1.0, 0.0, 60.0)


def test_package_data_is_read_from_the_package_folder_or_through_importlib_resources(monkeypatch):
    from importlib import resources

    from matrix.core import textfiles

    shipped = resources.files("matrix").joinpath("data/runners.toml").read_text(encoding="utf-8")
    assert textfiles.package_text("data/runners.toml") == shipped
    # Not a folder on disk (a zip): the module's own path leads nowhere, importlib.resources reads it.
    monkeypatch.setattr(textfiles, "__file__", "/nonexistent/archive.zip/matrix/core/textfiles.py")
    assert textfiles.package_text("data/runners.toml") == shipped
