"""Which backend a test tests: the matrix file's [tested] tables, derived signs, overrides, and the order they decide in."""

from __future__ import annotations

import pytest

from matrix.core.errors import ConfigError
from matrix.core.loader import load_matrix
from matrix.registered_suite.intent import MatrixIntent
from matrix.registered_suite.tested import SubjectTable, file_server_args, parse_overrides, parse_tested, subject_of

BACKENDS = ("triton", "trtllm_mha", "flashinfer", "fa3")
DECLARED = parse_tested(
    {
        "trtllm_mha": {"names": ["trtllm_mha", "trtllmmha"], "modules": ["trtllm_mha_backend"]},
        "flashinfer": {"names": ["flashinfer_backend"], "exclude": ["*mla*"]},
    },
    BACKENDS,
    "m.toml",
)


@pytest.mark.parametrize(
    ("nodeid", "imports", "args", "backend", "how"),
    [
        ("a/test_x.py::TestTRTLLMMHADecode::test_one", (), frozenset(), "trtllm_mha", "test name TestTRTLLMMHADecode"),
        ("a/test_fa3_paths.py::TestPaths", (), frozenset(), "fa3", "file name test_fa3_paths.py"),  # derived: fa3
        # The innermost name decides first: the method names fa3 in a trtllm_mha file.
        ("a/test_trtllm_mha.py::TestA::test_against_fa3", (), frozenset(), "fa3", "test name test_against_fa3"),
        (
            "a/test_x.py::TestX",
            ("sglang.srt.layers.attention.trtllm_mha_backend.TRTLLMHAAttnBackend",),
            frozenset(),
            "trtllm_mha",
            "imports",
        ),
        ("a/test_x.py::TestX", (), frozenset({"triton"}), "triton", "server args"),
        # Two backends at one step: none singled out.
        ("a/test_fa3_vs_triton.py::TestX", (), frozenset(), None, "several backends (triton, fa3)"),
        # flashinfer's MLA backend is not the MHA one the matrix means.
        ("mla/test_flashinfer_backend.py::TestX", (), frozenset(), None, "no name, import or server arg"),
        ("x/test_flashinfer_backend.py::TestX", (), frozenset(), "flashinfer", "[tested.flashinfer]"),
        ("x/test_other.py::TestX", (), frozenset(), None, "no name, import or server arg"),
    ],
)
def test_subject_order(nodeid, imports, args, backend, how):
    subject = subject_of(DECLARED, nodeid, imports=imports, server_args=args)
    assert subject.backend == backend
    assert how in subject.how


def test_overrides_come_first_and_empty_means_none():
    tested = SubjectTable(
        signs=DECLARED.signs,
        overrides=parse_overrides({"test": {"a/*": "", "b/*::TestX": "fa3"}}, BACKENDS, "o"),
        override_source="o",
    )
    assert subject_of(tested, "a/test_trtllm_mha.py::T").backend is None
    assert subject_of(tested, "b/test_triton_backend.py::TestX").backend == "fa3"


def test_server_args_in_any_quoting():
    text = 'args = ["--attention-backend", "fa3"]\nother = "--speculative-draft-attention-backend trtllm_mha"\nattention_backend="triton"'
    assert file_server_args(text) == {"fa3", "trtllm_mha", "triton"}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"cutlass": {}}, "unknown backend 'cutlass'"),
        ({"fa3": {"nmaes": ["x"]}}, "unknown key 'nmaes'"),
        ({"fa3": {"names": "fa3"}}, "names: expected a list"),
        ({"fa3": {"names": [""]}}, "names: expected a list"),
        ([], "must be a table"),
    ],
)
def test_bad_tables_are_config_errors(raw, message):
    with pytest.raises(ConfigError, match=message):
        parse_tested(raw, BACKENDS, "m.toml")


def test_the_built_in_matrix_declares_every_backend_and_loads():
    intent = MatrixIntent.from_paths()
    tested = intent.tested()
    intent.load()
    assert {s.backend for s in tested.signs} == set(BACKENDS)
    assert all("[tested." in s.source for s in tested.signs)  # declared, none derived
    load_matrix()  # the loader accepts the [tested] tables


def test_a_matrix_file_with_a_bad_tested_table_is_refused(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(
        'name = "m"\n[[axis]]\nname = "backend"\nvalues = ["a"]\nid = "{}"\n[[group]]\nname = "g"\nbackend = ["a"]\n'
        '[tested.b]\nnames = ["b"]\n'
    )
    with pytest.raises(ConfigError, match="unknown backend 'b'"):
        MatrixIntent.from_paths(path).load()
