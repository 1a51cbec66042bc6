"""The home page in a real browser: figures refresh without a reload, the navigation's badges
follow, and notifications are read from the page; no Content-Security-Policy violation."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"}`);
});
"""


def test_a_new_thesis_appears_on_the_home_and_in_the_badges_without_a_reload(
    live_server, page, log_in, approver, screenshot
):
    from playwright.sync_api import expect

    from tests.factories import ThesisFactory
    from trading.book.accounts import default_account

    said: list[str] = []
    page.add_init_script(RECORD_VIOLATIONS)
    page.on("console", lambda message: said.append(message.text))
    page.on("pageerror", lambda error: said.append(f"page error: {error}"))
    log_in("arjun")
    page.wait_for_selector("#home-pending")
    assert page.url == f"{live_server.url}/"
    assert page.locator('#home-pending [data-home="pending_count"]').inner_text() == "0"
    assert page.locator('#nav-pending [data-nav="pending"]').inner_text() == "0"
    page.evaluate("window.__loaded = true")  # gone if the page reloads

    thesis = ThesisFactory(account=default_account())

    # The page polls every ten seconds: the new thesis arrives within one poll.
    expect(page.locator('#home-pending [data-home="pending_count"]')).to_have_text("1", timeout=15_000)
    assert page.evaluate("window.__loaded") is True
    assert page.locator('#nav-pending [data-nav="pending"]').inner_text() == "1"
    assert page.locator('#nav-unread [data-nav="unread"]').inner_text() == "1"
    link = page.locator('[data-home-list="pending"] a')
    assert link.inner_text() == f"LONG {thesis.instrument.symbol}"
    assert link.get_attribute("href") == f"/theses/{thesis.pk}/"
    assert "nav-badge due" in (page.locator("#nav-pending").get_attribute("class") or "")
    screenshot("home")

    page.click("#nav-unread")
    page.wait_for_selector("#notifications")
    item = page.locator("#notifications li.unread")
    assert item.count() == 1 and f"LONG {thesis.instrument.symbol} needs approval" in item.inner_text()
    item.locator("button", has_text="Mark read").click()
    page.wait_for_selector("#notifications li.read")
    assert page.locator('#nav-unread [data-nav="unread"]').inner_text() == "0"
    screenshot("notifications")

    mentions = [text for text in said if "Content Security Policy" in text or "page error" in text]
    assert mentions + page.evaluate("window.__cspViolations || []") == []


def test_the_home_fits_a_phone_without_sideways_scrolling(live_server, browser, approver):
    from tests.conftest import PASSWORD
    from tests.factories import PipelineRunFactory, ThesisFactory
    from trading.book.accounts import default_account
    from trading.models import PipelineRun

    ThesisFactory(account=default_account())
    PipelineRunFactory(status=PipelineRun.Status.FAILED, failure_reason="a-very-long-unbroken-reason-" * 8)
    context = browser.new_context(viewport={"width": 390, "height": 844})
    phone = context.new_page()
    try:
        phone.goto(f"{live_server.url}/login/")
        phone.fill("#id_username", "arjun")
        phone.fill("#id_password", PASSWORD)
        phone.click("button[type=submit]")
        phone.wait_for_selector("#home-pending")

        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        assert phone.locator('#home-pending [data-home="pending_count"]').inner_text() == "1"
    finally:
        context.close()
