"""Issue 10's four attention challenges: listed, with pages, drawn as a mock interview's coding question."""

from __future__ import annotations

import random

import pytest
from fastapi.testclient import TestClient

from app.config import ROOT
from app.content.catalog import load_catalog
from app.services import mock as mocks

NEW = ["rope-cached-attention", "left-padded-decoding", "tiled-attention", "sliding-window-cache"]
ENTRY_POINTS = ["rope_attention", "padded_attention", "tiled_attention", "SlidingWindowCache"]


def test_the_api_lists_them_in_order_with_their_entry_points(client: TestClient) -> None:
    listed = [c["slug"] for c in client.get("/api/challenges").json()]
    assert [s for s in listed if s in NEW] == NEW
    for slug, entry in zip(NEW, ENTRY_POINTS, strict=True):
        detail = client.get(f"/api/challenges/{slug}").json()
        assert (
            detail["entry_point"] == entry
            and detail["prompt"]
            and "raise NotImplementedError" in detail["starter_code"]
        )


def test_the_list_page_and_each_page_show_them(client: TestClient) -> None:
    catalog = load_catalog(ROOT / "questions")
    titles = {c.slug: c.meta.title for c in catalog.challenges}
    page = client.get("/challenges").text
    for slug in NEW:
        assert f'href="/challenges/{slug}"' in page
        detail = client.get(f"/challenges/{slug}")
        assert detail.status_code == 200 and titles[slug] in detail.text


@pytest.mark.parametrize("slug", NEW)
def test_a_mock_interview_on_its_topics_can_draw_it(slug: str) -> None:
    catalog = load_catalog(ROOT / "questions")
    challenge = next(c for c in catalog.challenges if c.slug == slug)
    rng = random.Random(3)
    drawn = {
        mocks.choose_challenge(
            catalog=catalog,
            passed=set(),
            topics=challenge.meta.topics,
            difficulty=challenge.meta.difficulty.value,
            topic_weight={},
            rng=rng,
        ).slug  # type: ignore[union-attr]
        for _ in range(200)
    }
    assert slug in drawn
