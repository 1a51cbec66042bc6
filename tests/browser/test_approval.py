from __future__ import annotations

import pytest

from trading.book.domain.risk import CHECK_NAMES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_approver_approves_a_thesis_and_the_position_appears_on_the_portfolio(
    log_in, live_server, page, screenshot, approver, pending_thesis, settings
):
    settings.BROKER = {**settings.BROKER, "FILL_POLICY": "last_price"}
    log_in("arjun")
    page.click("text=Approvals")
    page.click(f"text=#{pending_thesis.pk}")

    page.wait_for_selector("#price-chart[data-rendered=true]", timeout=20_000)
    assert page.locator("#price-chart .shapelayer path").count() >= 3  # entry, stop and target lines
    assert page.locator("#risk li").count() == len(CHECK_NAMES)
    screenshot("thesis-page")
    page.fill("#comment", "clean trend, risk approved")
    page.click("button.approve")

    assert "Approved: order #" in page.locator(".messages").inner_text()
    assert page.locator("#thesis-status").inner_text().lower() == "approved"
    page.click("text=Portfolio")
    row = page.locator("#open-positions tbody tr")
    assert row.count() == 1 and "RELIANCE" in row.inner_text()
    screenshot("portfolio")


def test_a_viewer_sees_no_decision_buttons(log_in, live_server, page, viewer, pending_thesis):
    log_in("vera")
    page.goto(f"{live_server.url}/theses/{pending_thesis.pk}/")

    assert page.locator("#decide").count() == 0
    assert page.locator("button.approve").count() == 0


def test_approving_a_batch_past_max_positions_shows_the_refusal_and_its_figures(
    log_in, live_server, page, screenshot, approver, settings
):
    from tests.trading.book_rows import SESSION, instrument_at, pending
    from trading.book.accounts import default_account
    from trading.models import Account, Order

    settings.BROKER = {**settings.BROKER, "FILL_POLICY": "next_open"}
    account = default_account()
    Account.objects.filter(pk=account.pk).update(max_positions=2)
    theses = [pending(account, instrument_at(symbol), quantity=100) for symbol in ("ALPHA", "BRAVO", "CHARLIE")]
    log_in("arjun")

    for thesis in theses:
        page.goto(f"{live_server.url}/theses/{thesis.pk}/?as_of={SESSION}")
        page.fill("#comment", "morning batch")
        page.click("button.approve")

    message = page.locator(".messages").inner_text()
    assert "Refused:" in message and "max_positions" in message
    assert "0 open position(s) + 2 working order(s) = 2 ≥ limit 2" in message
    assert page.locator("#thesis-status").inner_text().lower() == "pending"
    screenshot("approval-refused-max-positions")
    assert Order.objects.count() == 2
