from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import require_or_skip

CHROMIUM = Path(os.environ.get("DESK_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"


@pytest.fixture(scope="module")
def browser():
    # Module scope, not session: while Playwright's sync API is open its event loop runs in this
    # thread, and tests after the browser modules need the thread free for async_to_sync.
    require_or_skip(CHROMIUM.exists(), f"Chromium at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the ORM calls the tests make
    # around it are plain synchronous calls, so Django's async guard does not apply.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def screenshot(page):
    def take(name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


@pytest.fixture
def log_in(page, live_server):
    """Log in through the real form as one of the test personas."""
    from tests.conftest import PASSWORD

    def go(username: str) -> None:
        page.goto(f"{live_server.url}/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")

    return go
