"""`kvprep check-content` names the file, the field and the problem for every broken card."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.cli import main
from app.config import Settings
from app.content.loader import ContentError, load_bank

GOOD = (
    Path(__file__).resolve().parents[2]
    / "questions"
    / "cards"
    / "kv-cache-contents"
    / "what-the-cache-stores.md"
).read_text()


TOPIC = "kv-cache-contents"


@pytest.fixture
def bank(tmp_path: Path, bank_root: Path) -> Path:
    """A one-card bank with the real topics file."""
    shutil.copy(bank_root / "topics.yaml", tmp_path / "topics.yaml")
    (tmp_path / "cards" / TOPIC).mkdir(parents=True)
    (tmp_path / "cards" / TOPIC / "good.md").write_text(GOOD)
    return tmp_path


BROKEN = {
    "missing-section": (GOOD.replace("## Follow-ups", "## Follow ups"), "## Follow-ups"),
    "unknown-topic": (GOOD.replace("topic: kv-cache-contents", "topic: kv-caches"), "topic"),
    "malformed-front-matter": (GOOD.replace("difficulty: easy", "difficulty: [easy"), "front matter"),
    "no-front-matter": (GOOD.split("---", 2)[2], "front matter"),
    "bad-difficulty": (GOOD.replace("difficulty: easy", "difficulty: trivial"), "difficulty"),
    "no-sources": (GOOD.replace("sources:", "old_sources:"), "sources"),
    "two-key-points": (
        GOOD.split("## Key points")[0]
        + "## Key points\n\n- one\n- two\n\n## Follow-ups"
        + GOOD.split("## Follow-ups")[1],
        "## Key points",
    ),
    "empty-wrong-answers": (
        GOOD.split("## Common wrong answers")[0] + "## Common wrong answers\n",
        "## Common wrong answers",
    ),
    "probe-out-of-range": (
        GOOD.replace("{probes: [3], difficulty: same}", "{probes: [3, 5], difficulty: same}"),
        "## Follow-ups 1 ('Why is the query not cached alongside the key and ').probes",
    ),
    "follow-up-without-probes": (
        GOOD.replace("{probes: [3], difficulty: same}\n", ""),
        "## Follow-ups 1 ('Why is the query not cached alongside the key and ')",
    ),
    "follow-up-unknown-difficulty": (
        GOOD.replace("{probes: [0], difficulty: harder}", "{probes: [0], difficulty: hardest}"),
        "## Follow-ups 2 ('Does the cache hold one entry per query head or pe').difficulty",
    ),
    "follow-up-without-answer": (
        GOOD.replace("### Does the cache hold", "### Is that all?\n\n### Does the cache hold"),
        "body",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_each_broken_card_is_named_with_its_field(
    case: str, bank: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, field = BROKEN[case]
    (bank / "cards" / TOPIC / f"{case}.md").write_text(
        text.replace("id: what-the-cache-stores", f"id: {case}")
    )
    assert main(["check-content", "--root", str(bank)]) == 1
    err = capsys.readouterr().err
    assert f"cards/{TOPIC}/{case}.md: {field}" in err, err
    assert "good.md" not in err


def test_duplicate_id_names_both_files(bank: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (bank / "cards" / "copy.md").write_text(GOOD)
    assert main(["check-content", "--root", str(bank)]) == 1
    err = capsys.readouterr().err
    # cards/copy.md sorts first, so the second file to claim the id is the one reported.
    assert (
        f"cards/{TOPIC}/good.md: id: duplicate id 'what-the-cache-stores', also used by cards/copy.md" in err
    )


def test_a_card_in_another_topics_folder_is_refused(bank: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A card's topic and its folder must agree: the folder is where people look for it."""
    (bank / "cards" / "rope").mkdir()
    (bank / "cards" / "rope" / "moved.md").write_text(GOOD.replace("id: what-the-cache-stores", "id: moved"))
    assert main(["check-content", "--root", str(bank)]) == 1
    err = capsys.readouterr().err
    assert (
        "cards/rope/moved.md: topic: 'kv-cache-contents' does not match the folder cards/rope/: "
        "move the file to cards/kv-cache-contents/ or correct the topic"
    ) in err, err
    assert "good.md" not in err
    # Nested one level too deep, or with no topic folder at all, is refused the same way.
    (bank / "cards" / "rope" / "moved.md").unlink()
    (bank / "cards" / TOPIC / "extra").mkdir()
    (bank / "cards" / TOPIC / "extra" / "deep.md").write_text(
        GOOD.replace("id: what-the-cache-stores", "id: d")
    )
    (bank / "cards" / "loose.md").write_text(GOOD.replace("id: what-the-cache-stores", "id: loose"))
    with pytest.raises(ContentError) as info:
        load_bank(bank)
    found = {(p.path, p.field) for p in info.value.problems}
    assert found == {(f"cards/{TOPIC}/extra/deep.md", "topic"), ("cards/loose.md", "topic")}
    assert "no topic folder" in str(info.value)


def test_every_problem_is_reported_at_once(bank: Path) -> None:
    (bank / "cards" / "a.md").write_text(BROKEN["unknown-topic"][0].replace("what-the-cache-stores", "a"))
    (bank / "cards" / "b.md").write_text(BROKEN["missing-section"][0].replace("what-the-cache-stores", "b"))
    with pytest.raises(ContentError) as info:
        load_bank(bank)
    assert {p.path for p in info.value.problems} == {"cards/a.md", "cards/b.md"}


def test_the_real_bank_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-content"]) == 0
    assert capsys.readouterr().out.startswith("ok: ")


def test_real_bank_meets_the_coverage_bar(bank_root: Path) -> None:
    loaded = load_bank(bank_root)
    assert len(loaded.live_cards) >= 110
    per_topic = {t.slug: 0 for t in loaded.topics}
    for card in loaded.live_cards:  # a retired card does not count towards its topic
        per_topic[card.topic] += 1
    assert len(per_topic) >= 32
    thin = {slug: n for slug, n in per_topic.items() if n < 3}
    assert not thin, f"topics with fewer than 3 cards: {thin}"


def test_server_refuses_to_start_on_a_broken_bank(bank: Path, db_url: str) -> None:
    from app.main import create_app

    (bank / "cards" / "bad.md").write_text(BROKEN["unknown-topic"][0].replace("what-the-cache-stores", "bad"))
    app = create_app(Settings(database_url=db_url, content_root=bank, grading_workers=0))
    with pytest.raises(ContentError, match="cards/bad.md: topic"), TestClient(app):
        pass
