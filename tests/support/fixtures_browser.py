"""Fixtures for the browser part of the suite (registered in tests/conftest.py).

Playwright drives Debian's Chromium (`/usr/bin/chromium`, installed by `make test`; never
`playwright install`) against pytest-django's `live_server`, which binds 127.0.0.1 through
`--liveserver 127.0.0.1` in pyproject's addopts. One browser per session, a fresh context
(cookies, storage) per test. Mark browser tests with `@pytest.mark.browser`.
"""

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
VIEWPORT = {"width": 1280, "height": 800}
SCREENSHOT_DIR = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
# Generous enough for a loaded CI machine, short enough that a broken page fails fast.
ACTION_TIMEOUT_MS = 10_000


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """One headless Chromium for the whole session."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make install-test` installs Debian's chromium.")
    # Playwright's sync API runs its own event loop; Django must allow ORM calls beside it.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


@pytest.fixture
def browser_context_options() -> dict:
    """Options for the per-test context; override in a test module to change them."""
    return {"viewport": VIEWPORT, "locale": "en-US", "timezone_id": "UTC"}


@contextmanager
def fresh_page(browser: Browser, live_server, **context_options) -> Iterator[Page]:
    """A page in a new context (no cookies, no storage) whose `base_url` is the live server."""
    context = browser.new_context(
        base_url=live_server.url, **({"viewport": VIEWPORT} | context_options)
    )
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def page(browser, browser_context_options, live_server) -> Iterator[Page]:
    """A fresh page in a fresh context, with `base_url` pointing at the live server."""
    with fresh_page(browser, live_server, **browser_context_options) as tab:
        yield tab


def sign_in(page: Page, username: str, password: str, *, next_url: str = "") -> None:
    """Sign in through the real login form, as a person would."""
    page.goto("/accounts/login/" + (f"?next={next_url}" if next_url else ""))
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    with page.expect_navigation():
        page.click("#sign-in")


def sign_out(page: Page) -> None:
    """Sign out through the user menu in the navigation bar."""
    if not page.locator("#user-menu").is_visible():  # a phone-width page: open the menu first
        page.click(".navbar-toggler")
        page.locator("#user-menu").wait_for(state="visible")
    if not page.locator("#sign-out").is_visible():
        page.click("#user-menu")
    with page.expect_navigation():
        page.click("#sign-out")


def screenshot(page: Page, name: str, *, full_page: bool = True) -> Path:
    """Save a PNG of the page under artifacts/screenshots/ (gitignored) and return its path."""
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOT_DIR / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)}.png"
    page.screenshot(path=str(path), full_page=full_page, animations="disabled")
    return path


@pytest.fixture
def signed_in_page(page):
    """`signed_in_page(username, password)` signs the page in and returns it."""

    def _sign_in(username: str, password: str):
        sign_in(page, username, password)
        return page

    return _sign_in
