"""Every source a card cites links its page, so the reader can check the claim (issue 22).

A source counts as linked when the card page renders a link for it (app/source_links.py turns
an arXiv id or an http(s) address in the text into one). The only sources allowed without a
link are kvprep's own measurements and lessons, which have no outside page, and the short
list below of sources whose page could not be found, each with its reason.
"""

from __future__ import annotations

from pathlib import Path

from app.content.loader import load_bank
from app.source_links import source_html

# Sources with no page to link, each with why. Empty: every outside source found its page.
# Add an entry only after searching for the page; remove it as soon as a link is added.
NO_PAGE_FOUND: dict[str, str] = {}


def is_own_work(source: str) -> bool:
    """kvprep's own measurements, lessons and notes: "kvprep measurement: ...", "... (source notes)"."""
    return source.startswith("kvprep ") or source.endswith("(source notes)")


def has_link(source: str) -> bool:
    return 'class="source-link"' in str(source_html(source))


def linkless(sources: list[str]) -> list[str]:
    """The sources the card page would show without a link that no rule excuses."""
    return [s for s in sources if not has_link(s) and not is_own_work(s) and s not in NO_PAGE_FOUND]


def test_every_cited_source_links_its_page(bank_root: Path) -> None:
    bank = load_bank(bank_root)
    missing = [f"{card.path}: {s}" for card in bank.cards for s in linkless(card.sources)]
    assert not missing, "sources without an arXiv id or http(s) address:\n" + "\n".join(missing)


def test_every_excused_source_is_still_cited_and_still_linkless(bank_root: Path) -> None:
    cited = {s for card in load_bank(bank_root).cards for s in card.sources}
    for source, reason in NO_PAGE_FOUND.items():
        assert reason.strip(), f"no reason given for {source!r}"
        assert source in cited, f"no card cites {source!r} any more: drop it from NO_PAGE_FOUND"
        assert not has_link(source), f"{source!r} has a link now: drop it from NO_PAGE_FOUND"


def test_a_source_without_id_or_address_is_reported() -> None:
    sources = [
        "Yu et al., 2022, Orca: A Distributed Serving System for Transformer-Based Models (OSDI 2022)",
        "Ainslie et al., 2023, GQA: Training Generalized Multi-Query Transformer Models (arXiv:2305.13245)",
        "vLLM documentation: CUDA Graphs (https://docs.vllm.ai/en/latest/design/cuda_graphs/)",
        "kvprep measurements: GPT-2 small on a CPU (source notes)",
        "kvprep measurement: torch 2.13.0 CPU, a fully masked row through scaled_dot_product_attention",
        # A bare domain is not an address the page links.
        "a table at glennklockwood.com/garden/processors/B200",
    ]
    assert linkless(sources) == [sources[0], sources[5]]
