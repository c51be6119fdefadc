"""schemathesis against the app's own OpenAPI schema, on SQLite and PostgreSQL: no request the
schema allows gets a 5xx, and every documented response matches its schema.

Bounded and deterministic: a few examples per operation (a few hundred cases in all, both
backends), generated from a fixed seed (derandomize) with no example database, so every run
sends the same requests.
"""

from __future__ import annotations

import hypothesis
import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from app.config import Settings
from tests.services.factories import fast_settings, signup

EXAMPLES_PER_OPERATION = 5
# What our own pages' scripts send with every JSON request (app/security.py).
HEADERS = {"X-Requested-With": "schemathesis"}


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
    )


def test_no_server_error_and_every_response_matches_the_schema(client: TestClient) -> None:
    signup(client, "schema@example.com")  # a signed-in account, so the account routes go deep
    schema = schemathesis.openapi.from_asgi("/openapi.json", client.app)
    failures: list[str] = []
    cases = 0

    for result in schema.get_all_operations():
        operation = result.ok()

        @hypothesis.given(case=operation.as_strategy())
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
            case.validate_response(response, checks=[not_a_server_error, response_schema_conformance])

        try:
            run()
        except Exception as exc:  # noqa: BLE001 - every operation's failure is reported at once
            failures.append(f"{operation.method.upper()} {operation.path}: {str(exc)[:1500]}")
    assert cases >= 50, cases
    print(f"schemathesis: {cases} cases")
    assert failures == [], "\n\n".join(failures)
