"""Runs flooding the server never delay a submission's verdict (issue 21, item 2).

The Runs hold their own sandbox slots (`run_slots`, app/services/challenge_runs.py) apart from
the `grading_workers` slots submissions use. The flood here is cookieless Runs from many
addresses, each asleep in the sandbox until the wall limit stops it, so that every Run slot
stays held while the submission is graded: sleeping children take no CPU, so on a busy machine
the measurement compares slots, not cores. The submission is timed twice in the same test, on
the quiet server and under the flood; the ratio between the two is what is asserted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.config import ROOT, Settings
from app.main import create_app
from graders.sandbox.client import shared_client, shutdown_shared
from tests.services.factories import fast_settings

SLUG = "fix-causal-attention"
SOLUTION = (ROOT / "questions" / "challenges" / SLUG / "solution.py").read_text()
ASLEEP = "import time\ntime.sleep(60)\n"  # holds its Run slot until the wall limit ends it


@pytest.fixture
def settings(db_url: str) -> Settings:
    return fast_settings(
        db_url,
        grading_workers=1,
        run_slots=2,
        run_slot_wait_s=0.2,
        runs_per_address_per_minute=1000,
        submissions_per_minute=1000,
        grade_wall_seconds=8.0,
        grade_cpu_seconds=8,
    )


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    # The process's one fork server is made on first use with that caller's slot count; an
    # earlier test's would have the default two, so this app's must be the one that makes it.
    shutdown_shared()
    with TestClient(create_app(settings)) as test_client:
        yield test_client
    shutdown_shared()


def _verdict_seconds(client: TestClient) -> float:
    """Seconds from POSTing the solution to reading its verdict (one long poll)."""
    start = time.monotonic()
    response = client.post(f"/api/challenges/{SLUG}/submissions", json={"code": SOLUTION})
    assert response.status_code == 202, response.text
    done = client.get(f"/api/submissions/{response.json()['id']}", params={"wait": 30}).json()
    assert done["status"] == "done" and done["verdict"] == "passed", done
    return time.monotonic() - start


def test_a_verdict_comes_as_fast_while_runs_hold_every_run_slot(
    client: TestClient, settings: Settings
) -> None:
    _verdict_seconds(client)  # the first grading warms the fork server and its imports
    quiet = min(_verdict_seconds(client) for _ in range(2))

    stop = threading.Event()
    answers: list[int] = []

    def flood(address: str) -> None:
        # A cookieless client: every request is a new visitor from this address.
        while not stop.is_set():
            stranger = TestClient(client.app, client=(address, 40000))
            answers.append(stranger.post(f"/api/challenges/{SLUG}/run", json={"code": ASLEEP}).status_code)

    flooders = [threading.Thread(target=flood, args=(f"10.9.0.{i}",), daemon=True) for i in range(6)]
    for thread in flooders:
        thread.start()
    runs = client.app.state.challenge_runs  # type: ignore[attr-defined]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and runs.busy_slots() < settings.run_slots:
        time.sleep(0.02)
    try:
        assert runs.busy_slots() == settings.run_slots, "the flood never held every Run slot"
        time.sleep(0.5)  # the Runs' children are forked and asleep
        assert shared_client().worker_slots == settings.grading_workers + settings.run_slots
        flooded = _verdict_seconds(client)
        still_held = runs.busy_slots()
    finally:
        stop.set()
        for thread in flooders:
            thread.join(timeout=30)
    # The Runs were still asleep in their slots when the verdict came, and the ones beyond the
    # slots were refused (429) rather than queued in front of the submission.
    assert still_held == settings.run_slots
    assert 429 in answers
    # A submission sharing its slot with the Runs waits for a Run's wall limit (8 s); on its
    # own slot it takes what it takes on the quiet server, give or take the machine's noise.
    assert flooded <= max(3 * quiet, quiet + 1.0), f"{flooded:.2f} s under the flood, {quiet:.2f} s quiet"
