"""schemathesis against the app's own OpenAPI schema, on SQLite and PostgreSQL, with every check it
has: no 5xx, every status, header, content type and body as the document says, every request the
schema allows accepted and every request it forbids refused, OPTIONS and other methods answered
405 with an Allow header, a created resource found where it was made.

The project's schemathesis.toml is loaded as `st run` loads it: it names the few operations whose
refusals the data decides (a Run's per-challenge input, a pasted config.json, a revoked share link,
a long-poll's wait), each with why.

Bounded and deterministic: a few examples per operation, generated from a fixed seed
(derandomize) with no example database, so every run sends the same requests.
"""

from __future__ import annotations

from typing import Any

import hypothesis
import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.config import SchemathesisConfig

from app.config import ROOT, Settings
from tests.services.factories import fast_settings, signup

EXAMPLES_PER_OPERATION = 3
# What our own pages' scripts send with every JSON request (app/security.py).
HEADERS = {"X-Requested-With": "schemathesis"}
# A long-poll holds its answer up to `wait` seconds while nothing grades here (no grading
# workers): a short wait still exercises the poll, and keeps the run within its minute.
LONGEST_WAIT_S = 0.05


@pytest.fixture
def settings(db_url: str) -> Settings:
    # Rate limits out of the way: a 429 is correct, but it would hide what comes after it.
    return fast_settings(
        db_url,
        login_attempts_per_minute=100_000,
        login_attempts_per_ip_per_minute=100_000,
        login_attempts_per_email_per_hour=100_000,
        signups_per_hour=100_000,
        submissions_per_minute=100_000,
        runs_per_address_per_minute=100_000,
        guests_per_hour=100_000,
    )


def every_check() -> list[Any]:
    load_all_checks()
    return [check for check in CHECKS.get_all() if callable(check) and not isinstance(check, type)]


def _short_wait(case: Any) -> Any:
    wait = (case.query or {}).get("wait")
    if isinstance(wait, int | float) and not isinstance(wait, bool) and wait > LONGEST_WAIT_S:
        case.query["wait"] = LONGEST_WAIT_S
    return case


def test_every_check_passes_on_every_operation(client: TestClient) -> None:
    signup(client, "schema@example.com")  # a signed-in account, so the account routes go deep
    config = SchemathesisConfig.from_path(ROOT / "schemathesis.toml")
    schema = schemathesis.openapi.from_asgi("/openapi.json", client.app, config=config)
    checks = every_check()
    assert {c.__name__ for c in checks} >= {
        "not_a_server_error",
        "status_code_conformance",
        "response_schema_conformance",
        "negative_data_rejection",
        "positive_data_acceptance",
        "unsupported_method",
        "allow_header_conformance",
    }
    failures: list[str] = []
    cases = 0

    for result in schema.get_all_operations():
        operation = result.ok()

        @hypothesis.given(case=operation.as_strategy().map(_short_wait))
        @hypothesis.settings(
            max_examples=EXAMPLES_PER_OPERATION,
            derandomize=True,
            database=None,
            deadline=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def run(case) -> None:  # type: ignore[no-untyped-def]
            nonlocal cases
            cases += 1
            response = case.call(session=client, headers=HEADERS)
            case.validate_response(response, checks=checks, headers=HEADERS)

        try:
            run()
        except Exception as exc:  # noqa: BLE001 - every operation's failure is reported at once
            failures.append(f"{operation.method.upper()} {operation.path}: {str(exc)[:1500]}")
    assert cases >= 100, cases
    print(f"schemathesis: {cases} cases, {len(checks)} checks")
    assert failures == [], "\n\n".join(failures)
