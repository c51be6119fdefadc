"""The fake `fake-add` challenge the sandbox tests grade against (real checks are tested elsewhere).

It calls `add(a, b)` with fresh random tensors and compares the result with `a + b`
computed in the grader; its module holds a secret marker string that a submission must
never be able to find.
"""

from __future__ import annotations

import types

import torch

from graders.checks.report import CheckReport, expect_close, run_test

FAKE_SLUG = "fake-add"
FAKE_MODULE = "kvprep_test_fake_add_check"
SECRET = "kvprep-secret-" + "7f3a9c"  # lives only in the grader's memory
GOOD = "def add(a, b):\n    return a + b\n"


def _fake_run(session: object) -> CheckReport:
    report = CheckReport()
    for i, shape in enumerate([(4, 8), (2, 3, 5)]):
        a, b = torch.randn(shape), torch.randn(shape)

        def body(a: torch.Tensor = a, b: torch.Tensor = b) -> None:
            expect_close(session.call("add", a, b), a + b, "add(a, b)")  # type: ignore[attr-defined]

        run_test(report, f"adds two tensors #{i}", body)
    return report


def fake_module() -> types.ModuleType:
    module = types.ModuleType(FAKE_MODULE)
    module.SLUG = FAKE_SLUG  # type: ignore[attr-defined]
    module.ENTRY_POINT = "add"  # type: ignore[attr-defined]
    module.SECRET = SECRET  # type: ignore[attr-defined]
    module.run = _fake_run  # type: ignore[attr-defined]
    return module
