"""A card's source as HTML: the text, escaped, with arXiv ids and web addresses as links.

Sources are plain text in the bank ("Ainslie et al., 2023, GQA: ... (arXiv:2305.13245)"), so
nothing in them is trusted as markup: every piece is escaped, an arXiv id links its abstract
page and an http(s) address links itself. Links open in the same tab; rel="noopener" all the
same, and "noreferrer" so a paper's site is not told which card the visitor was reading.
"""

from __future__ import annotations

import re
from functools import lru_cache

from markupsafe import Markup, escape

# New-style ids (2305.13245, with an optional version) and old-style ones (hep-th/9901001).
_ARXIV = r"arXiv:(?P<arxiv>\d{4}\.\d{4,5}(?:v\d+)?|[a-z-]+(?:\.[A-Z]{2})?/\d{7}(?:v\d+)?)"
# An address runs to the first space, quote or angle bracket; trailing punctuation is the sentence's.
_URL = r"(?P<url>https?://[^\s<>\"']+[^\s<>\"'.,;:!?)\]])"
_LINKABLE = re.compile(f"{_ARXIV}|{_URL}")


def arxiv_url(arxiv_id: str) -> str:
    return f"https://arxiv.org/abs/{arxiv_id}"


def _link(href: str, text: str) -> str:
    return f'<a href="{escape(href)}" rel="noopener noreferrer" class="source-link">{escape(text)}</a>'


@lru_cache(maxsize=4096)
def source_html(text: str) -> Markup:
    """The source with its arXiv ids and http(s) addresses as links, everything else as text."""
    parts: list[str] = []
    end = 0
    for match in _LINKABLE.finditer(text):
        parts.append(str(escape(text[end : match.start()])))
        href = arxiv_url(match["arxiv"]) if match["arxiv"] else match["url"]
        parts.append(_link(href, match.group(0)))
        end = match.end()
    parts.append(str(escape(text[end:])))
    return Markup("".join(parts))
