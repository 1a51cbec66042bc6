"""FATE > Reviews in a real browser: the waterfalls drawn, every keyboard shortcut (Enter, D, H, P,
Esc, ?) used, and the lifecycle page's trajectory drawn at the end of P; nothing fetched from off
the machine and nothing refused by the Content-Security-Policy on the way."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from agents.models import Heuristic
from tests.factories import position_on_path
from tests.factories.reviews import DEFAULT_END, RetrospectiveReportFactory, hard_part, position_row
from trading.book.accounts import default_account

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GAVE_BACK = ["100", "100", "102", "105", "107", "108", "106", "104", "102", "101.5"]
STOPPED = ["100", "100", "97", "94", "92"]


def reviews_with_positions():
    account = default_account()
    Heuristic.objects.get_or_create(code="H-1", defaults={"text": "Trade with the trend.", "status": "active"})
    winner = position_on_path(GAVE_BACK, account=account, horizon_sessions=20, close_by_hand="giving back")
    loser = position_on_path(STOPPED, account=account)
    rows = [position_row(winner, regret="650.00"), position_row(loser)]
    RetrospectiveReportFactory(horizon="daily", account=account, hard=hard_part(start=DEFAULT_END, positions=rows[1:]))
    earlier = RetrospectiveReportFactory(
        horizon="weekly",
        account=account,
        period_end=DEFAULT_END - dt.timedelta(days=7),
        hard=hard_part(gains="9000.00"),
    )
    weekly = RetrospectiveReportFactory(
        horizon="weekly", account=account, hard=hard_part(positions=rows), ungrounded_numbers=True
    )
    RetrospectiveReportFactory(horizon="epoch", account=account, hard=hard_part(positions=rows, calibration_alarm=True))
    return account, weekly, earlier, loser


def drawn(page, selector: str) -> None:
    page.wait_for_selector(f"{selector}[data-rendered=true]", timeout=20_000)
    assert page.locator(f"{selector} .main-svg").count() >= 1
    assert page.locator(f"{selector} g.trace").count() >= 1


def selected_card(page) -> str:
    return page.locator(".review-card[aria-current=true]").get_attribute("id") or ""


def back_to_reviews(page, live_server) -> None:
    page.keyboard.press("Escape")
    page.wait_for_url(re.compile(re.escape(live_server.url) + r"/reviews/(\?account=\d+)?$"))


def test_every_shortcut_of_the_reviews_page_works(live_server, page, screenshot, log_in, viewer):
    _account, weekly, earlier, loser = reviews_with_positions()
    off_machine: list[str] = []
    problems: list[str] = []
    page.on(
        "request",
        lambda request: off_machine.append(request.url) if not request.url.startswith(live_server.url) else None,
    )
    # Script errors and CSP refusals; a missing favicon (or a page not served yet) is not one.
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on(
        "console",
        lambda message: (
            problems.append(message.text)
            if message.type == "error" and not message.text.startswith("Failed to load resource")
            else None
        ),
    )

    log_in("vera")
    page.goto(f"{live_server.url}/reviews/")
    for horizon in ("daily", "weekly", "epoch"):
        drawn(page, f"#review-{horizon} .waterfall")
    assert (
        page.locator("#review-weekly .waterfall .waterfall").count() >= 1
        or page.locator("#review-weekly .waterfall g.trace.bars, #review-weekly .waterfall g.trace").count() >= 1
    )
    assert page.locator("#calibration-alarm").is_visible()
    assert page.locator("#review-weekly li.ungrounded .flag").first.is_visible()
    screenshot("pages-reviews")
    assert selected_card(page) == "review-daily"  # the first card by default

    # j / arrow keys move the selection; Enter opens the chosen review's full report.
    page.keyboard.press("j")
    assert selected_card(page) == "review-weekly"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("k")
    assert selected_card(page) == "review-weekly"
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/reviews/reports/{weekly.pk}/")
    drawn(page, f"#waterfall-{weekly.pk}")
    assert "99999.99 is not in the hard part" in page.locator("#narrative").inner_text()
    screenshot("pages-report")
    back_to_reviews(page, live_server)

    # D: the diff against the previous weekly review.
    page.keyboard.press("j")
    page.keyboard.press("d")
    page.wait_for_url(f"{live_server.url}/reviews/reports/{weekly.pk}/diff/")
    assert f"#{earlier.pk}" in page.locator("h1").inner_text()
    assert page.locator("#diff-money").is_visible()
    screenshot("pages-diff")
    back_to_reviews(page, live_server)

    # H: the first heuristic of the selected review's audit.
    page.keyboard.press("j")
    page.keyboard.press("h")
    page.wait_for_url(f"{live_server.url}/reviews/heuristics/H-1/")
    assert "H-1" in page.locator("h1").inner_text()
    back_to_reviews(page, live_server)

    # P: the worst position's lifecycle, with its trajectory drawn; Esc comes back.
    page.keyboard.press("j")
    page.keyboard.press("p")
    page.wait_for_url(f"{live_server.url}/reviews/positions/{loser.pk}/")
    drawn(page, "#price-chart")
    screenshot("pages-lifecycle")
    back_to_reviews(page, live_server)

    # ?: the help overlay, a dialog with a title that takes the focus; Esc closes it.
    page.keyboard.press("?")
    dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    assert dialog.is_visible()
    assert page.evaluate("document.activeElement.closest('#keys-help') !== null")
    for key in ("Enter", "D", "H", "P", "Esc", "?"):
        assert key in dialog.inner_text()
    screenshot("pages-keys-help")
    page.keyboard.press("Escape")
    assert not dialog.is_visible()
    assert page.url.endswith("/reviews/")  # Esc closed the dialog and did not leave the page

    # A narrower window stacks the cards; nothing runs off the side of the page.
    page.set_viewport_size({"width": 1024, "height": 900})
    page.wait_for_timeout(300)  # Plotly redraws its charts on resize
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    screenshot("pages-reviews-narrow")

    assert off_machine == []
    assert problems == []


def test_keys_are_not_captured_while_typing(live_server, page, log_in, viewer):
    reviews_with_positions()
    log_in("vera")
    page.goto(f"{live_server.url}/reviews/")
    page.wait_for_selector(".review-card[aria-current=true]")
    page.evaluate(
        "() => { const box = document.createElement('input'); box.id = 'typing';"
        " document.querySelector('main').prepend(box); }"
    )

    page.fill("#typing", "")
    page.type("#typing", "dhpj?")
    page.keyboard.press("Enter")

    assert page.url.endswith("/reviews/")
    assert page.input_value("#typing") == "dhpj?"
    assert not page.get_by_role("dialog").count() or not page.get_by_role("dialog").is_visible()


def test_the_empty_reviews_page_reads_well(live_server, page, screenshot, log_in, viewer):
    log_in("vera")
    page.goto(f"{live_server.url}/reviews/")

    assert page.locator("#reviews-empty").is_visible()
    assert "manage.py review" in page.locator("#reviews-empty").inner_text()
    screenshot("pages-reviews-empty")


def test_a_quiet_period_draws_a_readable_zero_waterfall(live_server, page, screenshot, log_in, viewer):
    quiet = RetrospectiveReportFactory(
        horizon="daily", account=default_account(), hard=hard_part(start=DEFAULT_END, quiet=True)
    )
    log_in("vera")
    page.goto(f"{live_server.url}/reviews/reports/{quiet.pk}/")

    drawn(page, f"#waterfall-{quiet.pk}")
    assert "nothing to attribute in this period" in page.locator(f"#waterfall-{quiet.pk}").inner_text()
    screenshot("pages-report-quiet")
