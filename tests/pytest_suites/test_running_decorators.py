"""Other libraries' decorators the table `matrix/data/decorators.toml` says run their test (torch's parametrize,
instantiate_parametrized_tests, config patches), and the one form it excepts (a `subtest` case)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from matrix.pytest_suites.audit import PytestAuditReport
from matrix.pytest_suites.decorators import running_table

HEAD = """
import unittest
from torch.testing._internal.common_utils import instantiate_parametrized_tests, parametrize, subtest
from torch._inductor import config as inductor_config
import torch._dynamo.config as dyn

"""


@pytest.mark.parametrize(
    ("decorator", "undetermined"),
    [
        ("@parametrize('width', [1, 2])", 0),
        ("@inductor_config.patch({'freezing': True})", 0),
        ("@dyn.patch(cache_size_limit=4)", 0),
        ("@parametrize('width', [1, subtest(2, decorators=[unittest.skip('no')])])", 1),
        ("@some_other_library.wraps_tests", 1),
    ],
)
def test_decorator_of_a_test_method(audit: Callable[..., PytestAuditReport], decorator: str, undetermined: int) -> None:
    text = (
        HEAD
        + f"@instantiate_parametrized_tests\nclass TestRoll(unittest.TestCase):\n    {decorator}\n    def test_roll(self, width=1):\n        pass\n"
    )
    plan = '[[entry]]\njob = "j"\nlabels = ["h100"]\npytest = "pytest tests/"\n'
    assert audit({"tests/test_roll.py": text}, plan).undetermined == undetermined


def test_every_row_cites_its_source() -> None:
    assert all(row.source and "." in row.name for row in running_table().values())
