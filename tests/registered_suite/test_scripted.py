"""What a registered file tests when run_suite.py starts it as a script, and tests whose body tests nothing.

Fixtures written fresh: `__main__` blocks that are missing, only `pass`, nested in a class, running a benchmark CLI,
or running the tests through a local helper; an inherited test overridden with `pass`."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from matrix.core.loader import load_runners
from matrix.guards.finder import analyse_source
from matrix.guards.model import GuardFindingKind as K
from matrix.registered_suite import audit_tree
from matrix.registered_suite.scripted import empty_tests, names_of_tests, script_findings, script_run
from matrix.schedule.load import load_schedule

RUNNERS = load_runners()
HEAD = "import unittest\n\n\nclass TestCacheEviction(unittest.TestCase):\n    def test_evicts_oldest(self):\n        self.assertTrue(True)\n\n\n"


def run_of(tail: str):
    text = HEAD + textwrap.dedent(tail)
    analysis = analyse_source("test_cache.py", text)
    return script_run(text, names_of_tests(analysis.scopes))


@pytest.mark.parametrize(
    ("tail", "runs", "why"),
    [
        ('if __name__ == "__main__":\n    unittest.main()\n', True, ""),
        ("if __name__ == '__main__':\n    import sys, pytest\n    sys.exit(pytest.main([__file__]))\n", True, ""),
        ("", False, "no `if __name__ == '__main__':` block"),
        ('if __name__ == "__main__":\n    pass\n', False, "is only `pass`"),
        # Nested in a class: at module level there is none.
        ('class Later:\n    if __name__ == "__main__":\n        unittest.main()\n', False, "nested in an indented block"),
        # A benchmark CLI instead of the tests (through a local function with a multi-line signature).
        (
            "def sweep(\n    sizes,\n    verify,\n):\n    for s in sizes:\n        print(s, verify)\n\n\n"
            'if __name__ == "__main__":\n    import argparse\n    p = argparse.ArgumentParser()\n    a = p.parse_args()\n'
            "    sweep([1, 2], verify=False)\n",
            False,
            "calls argparse.ArgumentParser, p.parse_args, sweep",
        ),
        # Through a local helper that runs unittest: followed, and it runs.
        ('def launch():\n    unittest.main(verbosity=2)\n\n\nif __name__ == "__main__":\n    launch()\n', True, ""),
        # Calling one test directly runs a test.
        ('if __name__ == "__main__":\n    TestCacheEviction().test_evicts_oldest()\n', True, ""),
        # An imported launcher the reading cannot see into: left open, never "runs nothing".
        ('from helpers import run_all_tests\n\nif __name__ == "__main__":\n    run_all_tests(__file__)\n', None, ""),
    ],
)
def test_main_block(tail, runs, why):
    got = run_of(tail)
    assert got.runs is runs
    assert why in got.why


def test_empty_override_and_empty_test():
    text = textwrap.dedent(
        '''
        import unittest
        from base_cases import SharedDecodeCases


        class TestNewModel(SharedDecodeCases):
            def test_stream(self):
                # not supported yet
                pass

            def test_batch(
                self,
            ):
                """Covered elsewhere."""
                ...

            def test_documented_stub(self):
                """A docstring alone is not read as an empty test."""

            def test_real(self):
                self.assertEqual(1, 1)


        class TestPlain(unittest.TestCase):
            def test_todo(self):
                ...
        '''
    )
    analysis = analyse_source("test_m.py", text)
    found = {e.nodeid.rpartition("::")[2]: e.override for e in empty_tests(text.splitlines(), analysis.scopes)}
    assert found == {"test_stream": True, "test_batch": True, "test_todo": False}


WORKFLOW = "on: push\njobs:\n  j:\n    runs-on: 4-gpu-b200\n    steps:\n      - run: python3 test/run_suite.py --suite base-b-test-4-gpu-b200\n"
REG = 'from sglang.test.ci.ci_register import register_cuda_ci\nregister_cuda_ci(est_time=5, stage="base-b", runner_config="4-gpu-b200")\n'


def test_the_audit_reads_the_main_block_when_the_schedule_starts_files_as_scripts(tmp_path: Path):
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "w.yml").write_text(WORKFLOW)
    suite = tmp_path / "test"
    suite.mkdir()
    body = REG + HEAD.removeprefix("import unittest\n")
    (suite / "test_bench_cli.py").write_text("import unittest\n" + body + 'if __name__ == "__main__":\n    print("bench")\n')
    (suite / "test_ok.py").write_text("import unittest\n" + body + 'if __name__ == "__main__":\n    unittest.main()\n')
    (suite / "test_override.py").write_text(
        "import unittest\nfrom cases import Shared\n"
        + REG
        + "\n\nclass TestX(Shared):\n    def test_a(self):\n        pass\n\n\nif __name__ == '__main__':\n    unittest.main()\n"
    )
    with_schedule = audit_tree(suite, RUNNERS, schedule=load_schedule(tmp_path, RUNNERS))
    got = {(f.kind, f.path) for f in with_schedule.findings if f.kind in (K.NEVER_RUNS, K.SILENT_PASS)}
    assert got == {(K.NEVER_RUNS, "test_bench_cli.py"), (K.SILENT_PASS, "test_override.py")}
    never = with_schedule.of_kind(K.NEVER_RUNS)[0]
    assert "run_suite.py starts every registered file as a script" in never.message and never.failing
    # Without a schedule, how the files are started is not known: no verdict on the block.
    without = audit_tree(suite, RUNNERS)
    assert not [f for f in without.findings if f.kind == K.NEVER_RUNS]
    assert [f.path for f in without.findings if f.kind == K.SILENT_PASS] == ["test_override.py"]


def test_an_empty_test_is_told_a_fix_for_its_own_case():
    """Only an override has an inherited test to fall back to; the kind's heading fits an empty body as well."""
    from matrix.core.finding import Tool, spec_of

    text = (
        "import unittest\nfrom cases import Shared\n\n\nclass TestX(Shared):\n    def test_a(self):\n        pass\n\n\n"
        "class TestY(unittest.TestCase):\n    def test_b(self):\n        pass\n"
    )
    analysis = analyse_source("test_m.py", text)
    hints = {f.scope.rpartition("::")[2]: f.hint for f in script_findings("test_m.py", analysis.scopes, ("1-gpu-h100",), text)}
    assert "the inherited test then runs" in hints["test_a"]
    assert "inherited" not in hints["test_b"] and hints["test_b"].startswith("write the test")
    title = spec_of(Tool.GUARDS, "silent-pass").title
    assert "empty body" in title and "returns early when a CI fact is true" not in title
