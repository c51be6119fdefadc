"""Sources as HTML: arXiv ids and http(s) addresses become links, everything else stays escaped text."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from app.config import ROOT
from app.content.loader import load_bank
from app.source_links import source_html


def test_an_arxiv_id_links_its_abstract() -> None:
    html = source_html("Ainslie et al., 2023, GQA (arXiv:2305.13245)")
    assert html == (
        'Ainslie et al., 2023, GQA (<a href="https://arxiv.org/abs/2305.13245" rel="noopener noreferrer" '
        'class="source-link">arXiv:2305.13245</a>)'
    )


@pytest.mark.parametrize(
    ("text", "href"),
    [
        ("arXiv:2305.13245v2", "https://arxiv.org/abs/2305.13245v2"),
        ("old style arXiv:hep-th/9901001", "https://arxiv.org/abs/hep-th/9901001"),
        ("see https://example.org/a?b=1&c=2.", "https://example.org/a?b=1&amp;c=2"),
        ("(https://docs.vllm.ai/en/latest/)", "https://docs.vllm.ai/en/latest/"),
    ],
)
def test_links_stop_where_the_sentence_goes_on(text: str, href: str) -> None:
    assert f'href="{href}"' in source_html(text)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


@pytest.mark.parametrize(
    ("text", "links"),
    [
        ("<script>alert(1)</script> arXiv:2305.13245", 1),
        ('https://x.org/"onmouseover="alert(1)', 1),
        ("<a href='javascript:alert(1)'>x</a>", 0),
        ("javascript:alert(1) ftp://example.org/file", 0),
        ("arXiv:12.34 and arXiv: 2305.13245", 0),
    ],
)
def test_nothing_in_a_source_is_markup(text: str, links: int) -> None:
    parser = _Tags()
    parser.feed(str(source_html(text)))
    assert [tag for tag, _ in parser.tags] == ["a"] * links
    for _, attrs in parser.tags:
        assert set(attrs) == {"href", "rel", "class"} and attrs["rel"] == "noopener noreferrer"
        assert (attrs["href"] or "").startswith(("https://", "http://")) and '"' not in (attrs["href"] or "")


def test_every_bank_source_with_an_arxiv_id_gets_a_link() -> None:
    sources = [s for card in load_bank(ROOT / "questions").cards for s in card.sources]
    with_ids = [s for s in sources if "arXiv:" in s]
    assert len(with_ids) > 50
    for source in with_ids:
        assert source.count("arXiv:") == str(source_html(source)).count('href="https://arxiv.org/abs/'), (
            source
        )
