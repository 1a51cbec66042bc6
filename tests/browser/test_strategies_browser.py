"""The strategies page in a real browser: an approver starts a history replay from the form and
watches its progress bar move without a reload, with cancel and resume offered as the job's state
allows; a viewer watches the same progress with no buttons at all."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from trading.models import ReplayJob, Strategy

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def strategy(instrument_with_bars) -> Strategy:
    strategy = Strategy.objects.create(name="swing", philosophy="Trend swings.")
    strategy.universe.set([instrument_with_bars])
    return strategy


def _job_box(page, strategy):
    return page.locator(f"#replay-job-{strategy.pk}")


def test_an_approver_starts_a_replay_and_watches_its_progress_live(
    log_in, live_server, page, screenshot, approver, strategy
):
    log_in("arjun")
    page.goto(f"{live_server.url}/strategies/")
    page.fill(f"#replay-start-{strategy.pk}", "2024-03-01")
    page.fill(f"#replay-end-{strategy.pk}", "2024-03-08")
    page.fill(f"#replay-policy-{strategy.pk}", "conviction>=0.6")
    page.click(f"#replay-form-{strategy.pk} button[type=submit]")

    assert "replay of 01 Mar 2024 – 08 Mar 2024 queued (6 sessions)" in page.locator(".messages").inner_text()
    box = _job_box(page, strategy)
    assert box.get_attribute("data-status") == "queued" and box.locator("form.job-cancel").is_visible()
    page.evaluate("window.__samePage = true")

    # The worker's part: three of six days done.
    job = ReplayJob.objects.get()
    started = timezone.now() - dt.timedelta(seconds=30)
    ReplayJob.objects.filter(pk=job.pk).update(status="running", started_at=started, days_done=3, last_day="2024-03-05")

    expect(box.locator(".job-percent")).to_have_text("50.0%", timeout=15_000)
    assert box.locator("progress").evaluate("bar => bar.value") == 50
    assert box.locator(".job-status").inner_text().lower() == "running"
    assert box.locator(".job-days").inner_text() == "3 / 6 sessions"
    screenshot("strategies-replay-progress")

    ReplayJob.objects.filter(pk=job.pk).update(status="cancelled", finished_at=timezone.now())
    page.wait_for_selector(f"#replay-job-{strategy.pk} form.job-resume:not(.hidden)", timeout=15_000)
    assert not box.locator("form.job-cancel").is_visible()
    assert page.evaluate("window.__samePage") is True

    page.click(f"#replay-job-{strategy.pk} form.job-resume button")
    assert "the replay resumes after 05 Mar 2024" in page.locator(".messages").inner_text()
    assert ReplayJob.objects.get().status == "queued"


def test_a_viewer_watches_a_replay_without_buttons(log_in, live_server, page, viewer, strategy):
    job = ReplayJob.objects.create(strategy=strategy, start=dt.date(2024, 3, 1), end=dt.date(2024, 3, 8), days_total=4)
    log_in("vera")
    page.goto(f"{live_server.url}/strategies/")
    box = _job_box(page, strategy)
    assert box.get_attribute("data-status") == "queued"

    ReplayJob.objects.filter(pk=job.pk).update(status="running", started_at=timezone.now(), days_done=1)
    expect(box.locator(".job-percent")).to_have_text("25.0%", timeout=15_000)
    assert box.locator("progress").evaluate("bar => bar.value") == 25

    assert page.locator("form.job-cancel, form.job-resume, form.replay-form").count() == 0
    assert page.locator("text=Replay history").count() == 0


@pytest.mark.parametrize("width", [1366, 390])
def test_a_strategys_realised_profit_shows_whole_on_a_laptop_and_a_phone(
    log_in, live_server, page, viewer, strategy, width
):
    page.set_viewport_size({"width": width, "height": 900})
    log_in("vera")
    page.goto(f"{live_server.url}/strategies/")
    table = page.locator(f"#perf-{strategy.pk}")
    # A replay that lost more than a crore: the widest figure the column is likely to hold.
    table.locator("[data-field=realised]").last.evaluate("cell => { cell.textContent = '-₹1,23,45,678.90'; }")

    overflow = table.evaluate("table => table.scrollWidth - table.clientWidth")
    assert overflow <= 0, f"the performance table is cut by {overflow} px at {width} px"
