"""matrix_cell parametrization, selection, expected-skip marks, the runner claim and staying out of the way."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import ALPHA, BETA, H100, STRICT, by_cell, report_of, write


@pytest.mark.usefixtures("tiny", "b200")
def test_ids_are_cell_ids_and_the_value_is_the_cell(pytester: pytest.Pytester) -> None:
    write(
        pytester,
        "test_ids.py",
        """
        def test_cell(matrix_cell):
            assert matrix_cell.id == f"{matrix_cell.backend}-s{matrix_cell.size}"
        """,
    )
    result = pytester.runpytest("--collect-only", "-q", *STRICT)
    result.stdout.fnmatch_lines([f"test_ids.py::test_cell[{c}]" for c in (*ALPHA, *BETA)])
    pytester.runpytest(*STRICT).assert_outcomes(passed=2, skipped=2)


@pytest.mark.usefixtures("tiny", "b200")
def test_expected_skip_carries_the_rule_and_its_reason(pytester: pytest.Pytester) -> None:
    write(pytester, "test_rule.py", "def test_cell(matrix_cell):\n    assert matrix_cell.backend == 'alpha'\n")
    result = pytester.runpytest("-rs", *STRICT, "--matrix-report", "out/report.json")
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(
        ["SKIPPED * specmatrix: [[]beta-hopper[]] beta kernels are built for Hopper only (needs sm in [[]90[]]; sm is 100)"]
    )
    assert by_cell(report_of(pytester)) == dict.fromkeys(ALPHA, "passed") | dict.fromkeys(BETA, "skipped-expected")
    assert result.ret == 0


@pytest.mark.parametrize(
    ("mark", "cli", "expected"),
    [
        pytest.param("", (), (*ALPHA, *BETA), id="everything"),
        pytest.param("@pytest.mark.matrix(select='beta-*')", (), BETA, id="marker"),
        pytest.param("@pytest.mark.matrix('*-s2')", (), ("alpha-s2", "beta-s2"), id="marker-positional"),
        pytest.param("", ("--matrix-select", "{alpha,beta}-s1"), ("alpha-s1", "beta-s1"), id="option"),
        pytest.param("@pytest.mark.matrix(select='alpha-*')", ("--matrix-select", "*-s2"), ("alpha-s2",), id="both-narrow"),
        pytest.param("", ("--matrix-select", "* !alpha-s1"), ("alpha-s2", *BETA), id="exclude"),
    ],
)
@pytest.mark.usefixtures("tiny")
def test_selection_narrows_the_cells(
    pytester: pytest.Pytester, mark: str, cli: tuple[str, ...], expected: tuple[str, ...]
) -> None:
    write(pytester, "test_sel.py", f"import pytest\n\n{mark}\ndef test_cell(matrix_cell):\n    pass\n")
    result = pytester.runpytest("--collect-only", "-q", *cli)
    collected = [line.split("[")[1].rstrip("]") for line in result.stdout.lines if line.startswith("test_sel.py::")]
    assert collected == list(expected)


@pytest.mark.usefixtures("tiny")
def test_select_file_lists_ids_one_per_line(pytester: pytest.Pytester) -> None:
    (pytester.path / "shard-0.txt").write_text("# shard 0\nalpha-s2\n\nbeta-s1  # trailing comment\n", encoding="utf-8")
    write(pytester, "test_file.py", "def test_cell(matrix_cell):\n    pass\n")
    # `=` keeps pytest's own `@argsfile` expansion away from the value.
    result = pytester.runpytest("--collect-only", "-q", "--matrix-select=@shard-0.txt")
    result.stdout.fnmatch_lines(["test_file.py::test_cell[alpha-s2]", "test_file.py::test_cell[beta-s1]", "2 tests collected*"])


@pytest.mark.usefixtures("tiny", "b200")
def test_a_test_with_no_cell_in_this_shard_is_deselected_not_skipped(pytester: pytest.Pytester) -> None:
    write(
        pytester,
        "test_shard.py",
        """
        import pytest

        @pytest.mark.matrix(select="beta-*")
        def test_beta(matrix_cell):
            pass

        def test_alpha(matrix_cell):
            pass
        """,
    )
    result = pytester.runpytest(*STRICT, "--matrix-select", "alpha-*", "--matrix-report", "out/report.json")
    result.assert_outcomes(passed=2, deselected=1)
    assert report_of(pytester)["planned"] == 2


@pytest.mark.parametrize(
    ("source", "message"),
    [
        pytest.param("@pytest.mark.matrix(select='gamma-*')", "*selector 'gamma-*' matches no cell*", id="typo"),
        pytest.param("@pytest.mark.matrix(select=['alpha-*'])", "*use @pytest.mark.matrix(select='<selector>')*", id="not-text"),
        pytest.param("@pytest.mark.matrix(where='alpha-*')", "*use @pytest.mark.matrix(select='<selector>')*", id="wrong-key"),
    ],
)
@pytest.mark.usefixtures("tiny")
def test_a_bad_marker_is_a_collection_error(pytester: pytest.Pytester, source: str, message: str) -> None:
    write(pytester, "test_bad.py", f"import pytest\n\n{source}\ndef test_cell(matrix_cell):\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([message])


@pytest.mark.parametrize(
    ("args", "detect", "message"),
    [
        pytest.param(
            STRICT, H100, "ERROR: specmatrix: runner '4-gpu-b200' claimed, but * needs sm100, sees sm90*", id="sm90-claims-b200"
        ),
        pytest.param(("--matrix-runner", "4-gpu-b300"), H100, "ERROR: specmatrix: unknown runner '4-gpu-b300'*", id="unknown"),
        pytest.param(("--matrix-select", "gamma-*"), H100, "ERROR: specmatrix: selector 'gamma-*' matches no cell*", id="select"),
        pytest.param(
            ("--matrix-select=@missing.txt",), H100, "ERROR: specmatrix: --matrix-select @missing.txt: cannot read*", id="file"
        ),
        pytest.param(
            ("--matrix-report", "out/r.xml"),
            H100,
            "ERROR: specmatrix: --matrix-report out/r.xml: name the JSON file*",
            id="report",
        ),
    ],
)
@pytest.mark.usefixtures("tiny")
def test_bad_usage_is_one_line_and_exit_4(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], detect: str, message: str
) -> None:
    monkeypatch.setenv("SPECMATRIX_DETECT", detect)
    write(pytester, "test_any.py", "def test_cell(matrix_cell):\n    pass\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stderr.str()


@pytest.mark.usefixtures("tiny")
def test_runner_comes_from_the_environment_cascade(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECMATRIX_RUNNER", "4-gpu-b200")
    write(pytester, "test_env.py", "def test_cell(matrix_cell):\n    pass\n")
    result = pytester.runpytest()  # the machine is a CPU box: the claimed runner does not fit
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: specmatrix: runner '4-gpu-b200' claimed*"])


@pytest.mark.usefixtures("tiny")
def test_runner_comes_from_pyproject(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECMATRIX_DETECT", H100)
    pytester.makepyprojecttoml('[tool.specmatrix]\nrunner = "1-gpu-h100"\n')
    write(pytester, "test_pp.py", "def test_cell(matrix_cell):\n    pass\n")
    result = pytester.runpytest("--matrix-report", "out/report.json")
    result.assert_outcomes(passed=4)
    assert report_of(pytester)["runner"]["name"] == "1-gpu-h100"


def test_without_matrix_tests_the_plugin_stays_out_of_the_way(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECMATRIX_MATRIX", str(pytester.path / "no-such-matrix.toml"))  # never read
    write(
        pytester,
        "test_plain.py",
        "import pytest\n\ndef test_a():\n    pass\n\n@pytest.mark.skip(reason='x')\ndef test_b():\n    pass\n",
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, skipped=1)
    assert "specmatrix skip audit" not in result.stdout.str()
    assert result.ret == 0


@pytest.mark.usefixtures("tiny")
def test_without_a_runner_named_it_plans_for_this_machine(pytester: pytest.Pytester) -> None:
    write(pytester, "test_auto.py", "def test_cell(matrix_cell):\n    pass\n")
    result = pytester.runpytest()  # CPU machine -> the cpu profile: alpha runs, beta skips
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "*specmatrix skip audit*",
            "runner cpu (0 GPU(s), no GPU, lenient skip policy*",
            "planned 4 = 2 passed + 2 skipped-expected",
        ]
    )


def test_requesting_matrix_cell_dynamically_is_explained(pytester: pytest.Pytester, tiny: Path) -> None:
    write(pytester, "test_dyn.py", "def test_dyn(request):\n    request.getfixturevalue('matrix_cell')\n")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*matrix_cell is parametrized by the specmatrix plugin*"])


@pytest.mark.parametrize(
    ("source", "message"),
    [
        pytest.param(
            """
            @pytest.mark.matrix(select="alpha-*")
            class TestCells:
                @pytest.mark.matrix(select="beta-*")
                def test_cell(self, matrix_cell):
                    pass
            """,
            "*selectors contradict*",
            id="class-and-method-contradict",
        ),
        pytest.param(
            """
            @pytest.mark.matrix(select="!alpha-* !beta-*")
            def test_cell(matrix_cell):
                pass
            """,
            "*excludes every cell*",
            id="excludes-everything",
        ),
    ],
)
@pytest.mark.usefixtures("tiny", "b200")
def test_marks_that_keep_no_cell_are_a_collection_error(pytester: pytest.Pytester, source: str, message: str) -> None:
    import textwrap

    write(pytester, "test_marks.py", "import pytest\n" + textwrap.dedent(source))
    result = pytester.runpytest(*STRICT, "--matrix-report", "out/report.json")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([message])
    assert result.ret != pytest.ExitCode.OK


@pytest.mark.usefixtures("tiny", "b200")
def test_a_module_skipped_at_import_is_planned_from_a_bom_source(pytester: pytest.Pytester) -> None:
    source = 'import pytest\npytest.skip("gone", allow_module_level=True)\n\ndef test_cell(matrix_cell):\n    pass\n'
    (pytester.path / "test_bom.py").write_bytes(b"\xef\xbb\xbf" + source.encode())
    result = pytester.runpytest(*STRICT, "--matrix-report", "out/report.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert report_of(pytester)["counts"]["skipped-unexpected"] == 2
