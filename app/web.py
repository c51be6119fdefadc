"""Jinja2 templates, the Markdown filters pages use, `static_url` for hashed static files, `path_for`."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from fastapi.templating import Jinja2Templates
from jinja2 import pass_context
from markdown_it import MarkdownIt
from markupsafe import Markup

from app.config import ROOT
from app.source_links import source_html
from app.static_assets import AssetManifest
from graders.wording import plural

# Raw HTML in Markdown is off: content is ours, but prompts and answers are shown verbatim.
_md = MarkdownIt("commonmark", {"html": False}).enable("table")

# Markdown is rendered once per distinct text and kept: the bank's texts are the same on every
# request (rendering costs a fifth of a card page's time uncached). Bounded, so any text a user types that
# reaches a filter cannot grow the process.
MARKDOWN_CACHE_ENTRIES = 8192


@lru_cache(maxsize=MARKDOWN_CACHE_ENTRIES)
def _render(text: str) -> str:
    return _md.render(text)


@lru_cache(maxsize=MARKDOWN_CACHE_ENTRIES)
def _render_inline(text: str) -> str:
    return _md.renderInline(text)


def markdown(text: str) -> Markup:
    return Markup(_render(text or ""))


def markdown_inline(text: str) -> Markup:
    return Markup(_render_inline(text or ""))


static_assets = AssetManifest(ROOT / "static")

templates = Jinja2Templates(directory=str(ROOT / "templates"))
# Templates are read once per process (a restart picks up edits): no stat() of every file per page.
templates.env.auto_reload = False
templates.env.filters["markdown"] = markdown
templates.env.filters["markdown_inline"] = markdown_inline
templates.env.filters["source_links"] = source_html
# "1 minute", "2 minutes": every count a page shows with its noun goes through one pluraliser.
templates.env.filters["plural"] = plural
# The one way templates link a static file: a content-hashed name, cached for a year.
templates.env.globals["static_url"] = static_assets.url


# Paths kept per app: Starlette finds a route's path by trying every route in turn (an exception
# raised and caught for each miss), which was half a signed-in card page's time. Routes do not
# change once the app is built; the bound keeps a page's parameters (a slug) from growing it.
PATH_CACHE_ENTRIES = 4096


@pass_context
def path_for(context: Any, name: str, /, **params: Any) -> str:
    """The path of the route named `name` ("/quiz"): like url_for, without scheme and host, so a
    link reads the same behind any proxy and in a page kept for every guest."""
    app = context["request"].app
    kept: dict[tuple[object, ...], str] | None = getattr(app.state, "paths_for", None)
    if kept is None:
        kept = app.state.paths_for = {}
    key = (name, *sorted(params.items()))
    path = kept.get(key)
    if path is None:
        path = str(app.url_path_for(name, **params))
        if len(kept) < PATH_CACHE_ENTRIES:
            kept[key] = path
    return path


templates.env.globals["path_for"] = path_for
