"""A real server and Debian's chromium, driven by Playwright, for tests that click through pages."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from fastapi import FastAPI

from app.config import ROOT, Settings
from app.db import migrate
from app.main import create_app
from app.services.clock import ManualClock
from tests.live import free_port, serve

# Debian's chromium-headless-shell: the same Blink as /usr/bin/chromium, without the full browser's
# window, compositor and profile machinery: what Playwright itself launches for a headless run. The
# browser tests take half the CPU in it (tests/browser on 3 processes: 366 CPU-s of the machine in
# 193 s, against 728 CPU-s in 380 s under /usr/bin/chromium); KVPREP_CHROMIUM names another binary.
HEADLESS_SHELL = "/usr/lib/chromium/chromium-headless-shell"
CHROMIUM = os.environ.get("KVPREP_CHROMIUM", HEADLESS_SHELL)
ARTIFACTS = ROOT / "test-artifacts"
CSP_REPORT = "Content Security Policy report:"
# How long an expect() waits for what it expects (Playwright's default is 5 s). The API docs page
# builds Swagger UI from a 1.6 MB bundle, and with the suite's three processes, their Chromiums and
# servers on 2 cores (load 6-12 on a shared machine) it once took longer than 5 s to show a heading
# that a quiet machine shows in under one.
EXPECT_TIMEOUT_MS = 15_000


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`kvprep serve` on a fresh SQLite file, as a user runs it (tests/live.py)."""
    with serve(tmp_path_factory.mktemp("live")) as base:
        yield base


@contextlib.contextmanager
def serve_in_thread(app: FastAPI, what: str) -> Iterator[str]:
    """`app` served by uvicorn in a thread of this process, so a test can reach its state (a clock)."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)


@pytest.fixture(scope="module")
def clocked_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, ManualClock]]:
    """A server in this process whose clock the test moves (a card falls due, a deadline passes)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('clocked-live') / 'kvprep.sqlite3'}"
    migrate(url)
    app = create_app(Settings(database_url=url, content_root=ROOT / "questions", grading_workers=0))
    clock = ManualClock(ticking=True)
    app.state.clock = clock
    with serve_in_thread(app, "the clocked test server") as base:
        yield base, clock


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium-headless-shell (.ci/run does)")
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=EXPECT_TIMEOUT_MS)

    with sync_playwright() as pw:
        instance = pw.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield instance
        instance.close()


# The two widths every page is tried at: a desktop window and a phone's (390 px).
WIDTHS = {"desktop": (1200, 900), "phone": (390, 844)}


def page_at(browser, base_url: str, width: str, *, timeout_ms: int = 15_000):  # type: ignore[no-untyped-def]
    """A new browser context at WIDTHS[width] with one page in it: (context, page)."""
    w, h = WIDTHS[width]
    context = browser.new_context(base_url=base_url, viewport={"width": w, "height": h})
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    return context, page


@pytest.fixture
def page(browser, live_server: str) -> Iterator[object]:  # type: ignore[no-untyped-def]
    context, page = page_at(browser, live_server, "desktop")
    violations = watch_csp(page)
    yield page
    context.close()
    assert violations == [], "the Content-Security-Policy blocked something a page needs"


def watch_csp(page) -> list[str]:  # type: ignore[no-untyped-def]
    """Every Content-Security-Policy violation the page reports, with the page and element.

    One kind is not ours and harmless: Chromium's own contenteditable editing (typing or
    inserting text into CodeMirror) may create a span with a style attribute, which the CSP
    blocks and CodeMirror redraws from its state at once. It is reported inside the editor's
    shadow root (the event's target is the .editor-host); anything else counts.
    """
    violations: list[str] = []

    def on_console(message) -> None:  # type: ignore[no-untyped-def]
        text = message.text
        if text.startswith(CSP_REPORT) and not text.startswith(f"{CSP_REPORT} style-src-attr in editor-host"):
            violations.append(f"{page.url}: {text[:300]}")

    page.on("console", on_console)
    page.add_init_script(
        "document.addEventListener('securitypolicyviolation', (e) => console.error("
        f"`{CSP_REPORT} ${{e.violatedDirective}} in ${{e.target && e.target.className}} "
        "${e.sourceFile}:${e.lineNumber} ${e.sample}`))"
    )
    return violations


def screenshot(page, name: str) -> Path | None:  # type: ignore[no-untyped-def]
    """With KVPREP_SCREENSHOTS=1, the whole page as a PNG in test-artifacts/, leaving the page as a
    person left it; its path. Otherwise nothing (None).

    The pictures are for a person to look at (no test compares them), and they were not cheap: a
    full-page PNG took 240-460 ms of Chromium's CPU, as much as loading the page, and the browser
    tests ask for one at 90 places, most of them at two widths.

    Playwright's full_page=True on a page taller than the window leaves Chromium swallowing the
    next click (a quiz's Start button did nothing after one): the window is grown to the page's
    height for the shot and given back its size instead, which takes the same picture."""
    if os.environ.get("KVPREP_SCREENSHOTS") != "1":
        return None
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    window = page.viewport_size
    height = page.evaluate("document.documentElement.scrollHeight")
    if window is None or height <= window["height"]:
        page.screenshot(path=str(path), full_page=True)
        return path
    page.set_viewport_size({"width": window["width"], "height": height})
    try:
        page.screenshot(path=str(path))
    finally:
        page.set_viewport_size(window)
    return path


# The innermost elements that stick out to the right of `width`, to say what to fix.
WIDEST = """(width) => [...document.querySelectorAll("body *")]
  .filter((e) => e.getBoundingClientRect().right > width + 0.5)
  .filter((e) => ![...e.children].some((c) => c.getBoundingClientRect().right > width + 0.5))
  .slice(0, 5)
  .map((e) => `${e.tagName}.${e.className} right=${Math.round(e.getBoundingClientRect().right)}`)"""


def assert_no_sideways_scroll(page, what: str) -> None:  # type: ignore[no-untyped-def]
    """The page fits its window's width; else name the innermost elements that stick out."""
    width = page.viewport_size["width"]
    scroll_width = page.evaluate("document.documentElement.scrollWidth")
    if scroll_width > width:
        wide = page.evaluate(WIDEST, width)
        raise AssertionError(f"{what} scrolls sideways at {width}px: {scroll_width}px; too wide: {wide}")
