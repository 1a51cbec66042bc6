"""In a real browser: the orders blotter shows an approved thesis's working order, and an approver
cancels it through the page's confirm step (a reason is required; "Keep it" backs out); the
portfolio's Close is the same kind of step."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_approver_cancels_a_working_order_through_the_confirm_step(log_in, live_server, page, screenshot, approver):
    from tests.factories import OrderFactory
    from trading.book.accounts import default_account
    from trading.models import AuditEvent, Order

    order = OrderFactory(thesis__account=default_account())
    log_in("arjun")
    page.goto(f"{live_server.url}/orders/")

    row = page.locator(f"#order-{order.pk}")
    assert (
        "WORKING" in row.inner_text().upper() and row.locator("a", has_text=f"thesis #{order.thesis_id}").count() == 1
    )
    confirm = row.locator("button", has_text="Confirm cancel")
    assert not confirm.is_visible()  # nothing is one click away from cancelling

    row.locator("summary", has_text="Cancel…").click()
    assert confirm.is_visible()
    reason = row.locator("input[name=reason]")
    # The step asks why first: the reason field takes the focus (static/js/orders.js).
    expect(reason).to_be_focused(timeout=5_000)
    row.locator("button", has_text="Keep it").click()
    assert not confirm.is_visible()
    assert Order.objects.get(pk=order.pk).status == Order.Status.WORKING

    row.locator("summary", has_text="Cancel…").click()
    confirm.click()  # without a reason the browser holds the form back
    assert Order.objects.get(pk=order.pk).status == Order.Status.WORKING
    reason.fill("results due tomorrow")
    screenshot("orders-cancel-confirm")
    confirm.click()

    page.wait_for_selector(".messages")
    assert f"Cancelled order #{order.pk}" in page.locator(".messages").inner_text()
    assert "cancelled by arjun: results due tomorrow" in page.locator(f"#order-{order.pk}").inner_text()
    assert AuditEvent.objects.filter(action="order_cancelled", target=f"order {order.pk}").count() == 1
    screenshot("orders-blotter")


def test_a_viewer_sees_the_blotter_without_any_cancel(log_in, live_server, page, viewer):
    from tests.factories import OrderFactory
    from trading.book.accounts import default_account

    order = OrderFactory(thesis__account=default_account())
    log_in("vera")
    page.goto(f"{live_server.url}/orders/")

    assert page.locator(f"#order-{order.pk}").count() == 1
    assert page.locator("details.confirm-step").count() == 0


def test_closing_a_position_asks_for_a_reason_in_a_confirm_step(log_in, live_server, page, screenshot, approver):
    from tests.factories import AccountFactory, position_on_path, trending
    from trading.book.accounts import default_account

    live = default_account()
    AccountFactory._meta.model.objects.filter(pk=live.pk).update(max_positions=50)
    position = position_on_path(trending(100, 4, "0.5"), account=live)
    log_in("arjun")
    page.goto(f"{live_server.url}/portfolio/")

    row = page.locator(f"#position-{position.pk}")
    assert "R" in row.inner_text() and "%" in row.inner_text()
    confirm = row.locator("button", has_text="Confirm close")
    assert not confirm.is_visible()
    row.locator("summary", has_text="Close…").click()
    assert confirm.is_visible() and "cannot be undone" in row.inner_text()
    screenshot("portfolio-close-confirm")
    row.locator("input[name=comment]").fill("thesis broken by the results")
    confirm.click()

    page.wait_for_selector(".messages")
    assert "Closed " in page.locator(".messages").inner_text()
    position.refresh_from_db()
    assert position.status == "closed" and position.exit_comment == "thesis broken by the results"

    # The thesis page's top box now tells the whole trade: the fill, the exit by hand and its reason, the PnL.
    page.goto(f"{live_server.url}/theses/{position.thesis_id}/")
    box = page.locator("#thesis-box")
    assert (
        "Reward:risk" in box.inner_text() and "At risk" in box.inner_text()
    )  # (a factory thesis has no debate: no why)
    assert "manual at" in page.locator("#traded-exit").inner_text()
    assert "thesis broken by the results" in page.locator("#traded-exit").inner_text()
    screenshot("thesis-box-closed")
