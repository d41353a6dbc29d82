"""The JUnit reader (`matrix/pytest_suites/junit_runs.py`) on files real pytest writes, and on hostile files.

Every outcome pytest's writer can give a testcase is produced by real pytest (pytester) and read back; a file
that is not a bounded, well-formed JUnit document without a DTD is one `ReportError` line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.core.errors import ReportError
from matrix.pytest_suites import junit_runs
from matrix.pytest_suites.junit_runs import Observed, collected_skip_reason, junit_files, parse_junit, read_junit

OUTCOMES = """
import pytest

@pytest.fixture
def broken():
    raise RuntimeError("setup broke")

@pytest.fixture
def leaky():
    yield
    raise RuntimeError("teardown broke")

def test_passes():
    pass

def test_fails():
    assert 1 == 2, "one is not two"

def test_setup_error(broken):
    pass

def test_teardown_error(leaky):
    pass

def test_skips():
    pytest.skip("not here")

@pytest.mark.skipif(True, reason="never on this host")
def test_marked_skip():
    pass

@pytest.mark.xfail(reason="known bug")
def test_xfails():
    assert False

@pytest.mark.xfail(reason="fixed already", strict=True)
def test_xpass_strict():
    pass

@pytest.mark.xfail(reason="maybe fixed")
def test_xpass():
    pass
"""


@pytest.fixture(params=["xunit1", "xunit2"])
def outcomes_run(pytester: pytest.Pytester, request: pytest.FixtureRequest) -> Path:
    pytester.makepyfile(test_outcomes=OUTCOMES)
    pytester.makepyfile(test_broken_module="import no_such_module_here\n\ndef test_never():\n    pass\n")
    pytester.makepyfile(test_skipped_module="import pytest\n\npytest.importorskip('no_such_module_either')\n")
    out = pytester.path / "junit.xml"
    pytester.runpytest(f"--junitxml={out}", "-o", f"junit_family={request.param}", "--continue-on-collection-errors")
    return out


def test_every_outcome_pytest_writes(outcomes_run: Path) -> None:
    run = read_junit(outcomes_run)
    by_name = {c.name: c for c in run.cases}
    assert {n: c.observed for n, c in by_name.items() if n.startswith("test_")} == {
        "test_passes": Observed.PASSED,
        "test_fails": Observed.FAILED,
        "test_setup_error": Observed.ERROR,
        "test_teardown_error": Observed.ERROR,
        "test_skips": Observed.SKIPPED,
        "test_marked_skip": Observed.SKIPPED,
        "test_xfails": Observed.XFAILED,
        "test_xpass_strict": Observed.FAILED,  # pytest reports a strict XPASS as a failure
        "test_xpass": Observed.PASSED,
        "test_broken_module": Observed.COLLECTION_ERROR,
        "test_skipped_module": Observed.SKIPPED,
    }
    assert by_name["test_skips"].message == "not here"
    assert by_name["test_marked_skip"].message == "never on this host"
    assert by_name["test_xfails"].message == "known bug"
    assert by_name["test_skipped_module"].collector and by_name["test_broken_module"].collector
    # a collection-time skip's reason comes from the collect report pytest writes as the element's text
    assert (
        by_name["test_skipped_module"].message
        == "could not import 'no_such_module_either': No module named 'no_such_module_either'"
    )
    assert not by_name["test_skips"].collector
    assert by_name["test_passes"].classname == "test_outcomes"
    assert run.suites == ("pytest",)
    assert [o for o in Observed if not o.ran] == [Observed.SKIPPED, Observed.COLLECTION_ERROR]


def test_the_file_attribute_of_xunit1(outcomes_run: Path) -> None:
    files = {c.file for c in read_junit(outcomes_run).cases if c.name == "test_passes"}
    text = outcomes_run.read_text(encoding="utf-8")
    assert files == ({"test_outcomes.py"} if 'file="' in text else {""})


def test_an_old_pytests_strict_xpass_and_texts_are_kept_short() -> None:
    long = "x" * (junit_runs.MAX_TEXT * 3)
    doc = (
        '<testsuite name="s"><testcase classname="m" name="t"><skipped message="xfail-marked test passes unexpectedly"/>'
        f'</testcase><testcase classname="m" name="u"><skipped type="pytest.skip" message="{long}">{long}</skipped>'
        "<system-out>captured text that is not the skip's</system-out></testcase></testsuite>"
    )
    first, second = parse_junit(doc.encode(), "f.xml").cases
    assert first.observed is Observed.XPASSED
    assert second.observed is Observed.SKIPPED and len(second.message) == junit_runs.MAX_TEXT


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            "('/ci/tests/test_x.py', 3, \"Skipped: could not import 'x': No module named 'x'\")",
            "could not import 'x': No module named 'x'",
        ),
        ("('/ci/tests/test_x.py', 3, 'Skipped: module level')", "module level"),
        ("not a tuple", ""),
        ("('a', 1)", ""),
        ("__import__('os').system('true')", ""),  # literal_eval: never evaluated
    ],
)
def test_the_reason_of_a_collection_skip(text: str, reason: str) -> None:
    assert collected_skip_reason(text) == reason


# --- hostile files: one line each, nothing expanded ---------------------------------------------------------

ENTITY_BOMB = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">]>
<testsuites><testsuite><testcase classname="a" name="&lol2;"/></testsuite></testsuites>"""
EXTERNAL = b"""<?xml version="1.0"?>
<!DOCTYPE t [<!ENTITY secret SYSTEM "file:///etc/hostname">]>
<testsuites><testsuite><testcase classname="a" name="&secret;"/></testsuite></testsuites>"""


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (ENTITY_BOMB, "f.xml: not read: it has a document type declaration (DTDs and entities are not read)"),
        (EXTERNAL, "f.xml: not read: it has a document type declaration (DTDs and entities are not read)"),
        (b'<!DOCTYPE testsuites SYSTEM "http://example.invalid/j.dtd"><testsuites/>', "document type declaration"),
        (b'<testsuites><testcase name="&undefined;"/></testsuites>', "f.xml: not well-formed XML (undefined entity, line 1)"),
        (b"<testsuites>" * 40 + b"</testsuites>" * 40, "f.xml: not read: elements nested deeper than 32"),
        (b"\xff\xfe\x00garbage", "f.xml: not well-formed XML"),
        (b"<coverage/>", "f.xml: not read: its root element is <coverage>, not <testsuites> or <testsuite>"),
        (b"<testsuites>", "f.xml: not well-formed XML (no element found, line 1)"),
        (b"", "f.xml: not well-formed XML (no element found, line 1)"),
    ],
)
def test_a_hostile_or_broken_file_is_one_line(data: bytes, said: str) -> None:
    with pytest.raises(ReportError) as caught:
        parse_junit(data, "f.xml")
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_the_element_and_size_bounds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(junit_runs, "MAX_ELEMENTS", 10)
    many = b"<testsuite>" + b'<testcase classname="a" name="b"/>' * 10 + b"</testsuite>"
    with pytest.raises(ReportError, match=r"f\.xml: not read: more than 10 elements"):
        parse_junit(many, "f.xml")
    monkeypatch.setattr(junit_runs, "MAX_BYTES", 100)
    path = tmp_path / "big.xml"
    path.write_bytes(b"<testsuite>" + b" " * 200 + b"</testsuite>")
    with pytest.raises(ReportError, match=r"big.xml: larger than 0 MiB; not read"):
        read_junit(path)


def test_files_of_a_folder(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    for name in ("b/2.xml", "1.xml", "notes.txt"):
        (tmp_path / name).write_text("<testsuite/>", encoding="utf-8")
    assert [p.relative_to(tmp_path).as_posix() for p in junit_files(tmp_path)] == ["1.xml", "b/2.xml"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReportError, match="empty: folder holds no"):
        junit_files(tmp_path / "empty")
    with pytest.raises(ReportError, match="no such file or folder"):
        junit_files(tmp_path / "none.xml")
