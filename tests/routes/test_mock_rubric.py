"""The rubric of a mock report over HTTP: shown on the report, corrected by its owner through the
page's form (CSRF) or the API, kept after a reload, marked as corrected on the shared link too."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from app.services.clock import ManualClock
from tests.services.factories import BODYLESS, csrf, other_client


def scored_interview(client: TestClient, clock: ManualClock) -> dict:
    """A short interview answered through the API, ended, and scored through the page's form."""
    state = client.post("/api/mock", json={"minutes": 9, "topics": ["rope"], "with_challenge": False}).json()
    while state["current"]:
        current = state["current"]
        body: dict[str, object] = {"position": current["position"], "step": current["step"]}
        body["text"] = "RoPE rotates query and key pairs, but the cache keeps keys already rotated."
        if current["step"] == "question" and current["kind"] == "numeric":
            body |= {"value": "1", "unit": current["numeric"]["unit"]}
        if current["step"] == "question" and current["kind"] == "choice":
            body["picked"] = [0]
        clock.advance(10)
        state = client.post(f"/api/mock/{state['id']}/answers", json=body).json()
    url = f"/mock/{state['id']}"
    client.post(url + "/score", data={"csrf_token": csrf(client, url), "kp-0": ["0"], "fu-0": "1"})
    report = client.get(f"/api/mock/{state['id']}/report").json()
    assert report["scored"] and report["rubric_overall"] in {1, 2, 3, 4}
    return {"id": state["id"], "url": url, "report": report}


def signal_on_page(page: str, position: int, signal: str) -> str:
    """The HTML of one signal's line in one question's rubric."""
    block = re.search(rf'<div class="mock-rubric"[^>]*data-position="{position}">(.*?)</div>', page, re.S)
    assert block, f"no rubric for question {position + 1}"
    line = re.search(
        rf'<li class="rubric-signal" data-signal="{signal}">(.*?)</details>', block.group(1), re.S
    )
    assert line, f"no {signal} line"
    return line.group(1)


def test_a_correction_from_the_report_page_is_kept_and_shared_as_corrected(
    app_client: TestClient, clock: ManualClock
) -> None:
    interview = scored_interview(app_client, clock)
    url, first = interview["url"], interview["report"]["items"][0]
    signals = {s["signal"]: s for s in first["rubric"]["signals"]}
    computed = signals["trade_offs"]["computed"]
    mine = computed % 4 + 1  # any other rating
    page = app_client.get(url).text
    assert "Rubric overall:" in page and "Correct counted twice" in page
    assert f'data-rating="{computed}"' in signal_on_page(page, 0, "trade_offs")
    assert "corrected" not in signal_on_page(page, 0, "trade_offs")

    # Without the form's token: refused, nothing kept.
    refused = app_client.post(url + "/rubric", data={"position": "0", "signal": "trade_offs", "rating": mine})
    assert refused.status_code == 403
    form = {
        "csrf_token": csrf(app_client, url),
        "position": "0",
        "signal": "trade_offs",
        "rating": str(mine),
    }
    done = app_client.post(url + "/rubric", data=form, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == url

    reloaded = app_client.get(url).text
    line = signal_on_page(reloaded, 0, "trade_offs")
    assert f'data-rating="{mine}"' in line and 'class="badge corrected"' in line
    assert f"(computed {computed}/4)" in line
    assert f'<option value="{mine}" selected>' in line  # the form starts from the kept rating
    as_json = app_client.get(f"/api/mock/{interview['id']}/report").json()
    kept = {s["signal"]: s for s in as_json["items"][0]["rubric"]["signals"]}["trade_offs"]
    assert (kept["rating"], kept["computed"], kept["corrected"]) == (mine, computed, True)
    assert as_json["score"] == interview["report"]["score"]  # the score is the user's ticks, unchanged

    # The shared link shows the corrected rating, marked, and no form.
    token = app_client.post(f"/api/mock/{interview['id']}/share", headers=BODYLESS).json()["token"]
    shared = other_client(app_client).get(f"/mock/shared/{token}").text
    block = re.search(r'data-signal="trade_offs">(.*?)</li>', shared, re.S)
    assert block and f'data-rating="{mine}"' in block.group(1) and "corrected" in block.group(1)
    assert "Correct this rating" not in shared and "/rubric" not in shared


def test_the_api_corrects_and_refuses_what_cannot_be(app_client: TestClient, clock: ManualClock) -> None:
    running = app_client.post("/api/mock", json={"minutes": 9, "topics": ["rope"], "with_challenge": False})
    mock_id = running.json()["id"]
    body = {"position": 0, "signal": "trade_offs", "rating": 4}
    assert app_client.post(f"/api/mock/{mock_id}/rubric", json=body).status_code == 409  # not scored
    app_client.post(f"/api/mock/{mock_id}/finish", headers=BODYLESS)
    app_client.post(f"/api/mock/{mock_id}/score", json={"items": []})
    # The clock stopped before any answer: the first question was asked, the second never was.
    fixed = app_client.post(f"/api/mock/{mock_id}/rubric", json=body)
    assert fixed.status_code == 200, fixed.text
    kept = {s["signal"]: s for s in fixed.json()["items"][0]["rubric"]["signals"]}["trade_offs"]
    assert (kept["rating"], kept["computed"], kept["corrected"]) == (4, 1, True)
    assert app_client.post(f"/api/mock/{mock_id}/rubric", json=body | {"position": 1}).status_code == 404
    assert app_client.post(f"/api/mock/{mock_id}/rubric", json=body | {"rating": 5}).status_code == 422
    assert app_client.post(f"/api/mock/{mock_id}/rubric", json=body | {"signal": "charm"}).status_code == 422
    # Someone else's interview: 404, as for every other route.
    assert other_client(app_client).post(f"/api/mock/{mock_id}/rubric", json=body).status_code == 404
    # The API's retry of one card: one question on it, whatever the length sent.
    card = fixed.json()["items"][0]["card_id"]
    retry = app_client.post("/api/mock", json={"minutes": 45, "card": card})
    assert retry.status_code == 201, retry.text
    assert retry.json()["questions"] == 1 and retry.json()["minutes"] == 4
    app_client.post(f"/api/mock/{retry.json()['id']}/finish", headers=BODYLESS)
    assert app_client.post("/api/mock", json={"minutes": 45, "card": "no-such-card"}).status_code == 404


def test_the_debrief_and_try_this_question_again(app_client: TestClient, clock: ManualClock) -> None:
    interview = scored_interview(app_client, clock)
    first = interview["report"]["items"][0]
    assert first["kind"] == "recall" and first["covered"] == [0]
    assert [m["point"] for m in first["debrief"]] == list(range(1, len(first["key_points"])))
    assert all(m["strong"] == first["key_points"][m["point"]] for m in first["debrief"])
    page = app_client.get(interview["url"]).text
    debrief = re.search(r'<div class="mock-debrief"[^>]*data-position="0">(.*?)</form>', page, re.S)
    assert debrief and "Strong answer, key point 2" in debrief.group(1)
    assert f'name="card_id" value="{first["card_id"]}"' in debrief.group(1)

    # The button: a one-question interview on that card, running.
    token = csrf(app_client, interview["url"])
    retried = app_client.post("/mock/retry", data={"csrf_token": token, "card_id": first["card_id"]})
    assert retried.status_code == 200 and "Question 1 of 1" in retried.text
    mock_id = int(str(retried.url).rstrip("/").rsplit("/", 1)[1])
    state = app_client.get(f"/api/mock/{mock_id}").json()
    assert state["status"] == "running" and state["questions"] == 1 and not state["with_challenge"]
    assert state["current"]["kind"] == "recall"
    # A second one while it runs: back to the running one, told why.
    again = app_client.post("/mock/retry", data={"csrf_token": token, "card_id": first["card_id"]})
    assert (
        str(again.url).endswith(f"/mock/{mock_id}") and "already have a mock interview running" in again.text
    )
    # The shared report shows the debrief, and no button.
    share = app_client.post(f"/api/mock/{interview['id']}/share", headers=BODYLESS).json()
    shared = other_client(app_client).get(f"/mock/shared/{share['token']}").text
    assert "Strong answer, key point 2" in shared and "/mock/retry" not in shared
