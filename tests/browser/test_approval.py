from __future__ import annotations

import pytest

from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _log_in(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")


def test_an_approver_approves_a_thesis_and_the_position_appears_on_the_portfolio(
    live_server, page, screenshot, approver, pending_thesis, settings
):
    settings.BROKER = {**settings.BROKER, "FILL_POLICY": "last_price"}
    _log_in(page, live_server, "arjun")
    page.click("text=Approvals")
    page.click(f"text=#{pending_thesis.pk}")

    page.wait_for_selector("#price-chart[data-rendered=true]", timeout=20_000)
    assert page.locator("#price-chart .shapelayer path").count() >= 3  # entry, stop and target lines
    assert page.locator("#risk li").count() == 7
    screenshot("thesis-page")
    page.fill("#comment", "clean trend, risk approved")
    page.click("button.approve")

    assert "Approved: order #" in page.locator(".messages").inner_text()
    assert page.locator("#thesis-status").inner_text().lower() == "approved"
    page.click("text=Portfolio")
    row = page.locator("#open-positions tbody tr")
    assert row.count() == 1 and "RELIANCE" in row.inner_text()
    screenshot("portfolio")


def test_a_viewer_sees_no_decision_buttons(live_server, page, viewer, pending_thesis):
    _log_in(page, live_server, "vera")
    page.goto(f"{live_server.url}/theses/{pending_thesis.pk}/")

    assert page.locator("#decide").count() == 0
    assert page.locator("button.approve").count() == 0
