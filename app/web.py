"""Jinja2 templates and the Markdown filter pages use."""

from __future__ import annotations

from fastapi.templating import Jinja2Templates
from markdown_it import MarkdownIt
from markupsafe import Markup

from app.config import ROOT

# Raw HTML in Markdown is off: content is ours, but prompts and answers are shown verbatim.
_md = MarkdownIt("commonmark", {"html": False}).enable("table")


def markdown(text: str) -> Markup:
    return Markup(_md.render(text or ""))


def markdown_inline(text: str) -> Markup:
    return Markup(_md.renderInline(text or ""))


templates = Jinja2Templates(directory=str(ROOT / "templates"))
templates.env.filters["markdown"] = markdown
templates.env.filters["markdown_inline"] = markdown_inline
