"""The runs list in a real browser: it follows a run from queued to completed with its thesis link
without a reload, filters survive paging, and a failure reason is shown as text, never as HTML."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.factories.book import ThesisFactory
from trading.models import PipelineRun

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DAY = dt.date(2026, 11, 20)


def _runs(instrument, count: int, **fields) -> list[PipelineRun]:
    fields = {"as_of": DAY, "provider": "offline", "status": "completed", **fields}
    return PipelineRun.objects.bulk_create(PipelineRun(instrument=instrument, **fields) for _ in range(count))


def test_the_runs_list_follows_a_run_to_its_thesis_without_a_reload(
    log_in, live_server, page, screenshot, viewer, instrument
):
    [run] = _runs(instrument, 1, status="queued")
    log_in("vera")
    page.goto(f"{live_server.url}/runs/")
    page.evaluate("window.__samePage = true")
    row = page.locator(f'tr[data-run="{run.pk}"]')
    assert row.locator(".status").inner_text().lower() == "queued"

    # The worker's part: the run finishes and its thesis is written; the page must show both.
    PipelineRun.objects.filter(pk=run.pk).update(status="completed")
    thesis = ThesisFactory(instrument=instrument, run=run)
    [newer] = _runs(instrument, 1, status="running")

    page.wait_for_selector(f'tr[data-run="{run.pk}"] a.thesis-link', timeout=15_000)
    assert page.evaluate("window.__samePage") is True
    assert row.locator(".status").inner_text().lower() == "completed"
    assert row.locator("a.thesis-link").get_attribute("href") == f"/theses/{thesis.pk}/"
    assert page.locator(f'tr[data-run="{newer.pk}"]').count() == 1  # a new run appears at the top
    assert page.locator("#runs-total").inner_text().startswith("2 runs")
    screenshot("runs-list-live")


def test_filters_survive_paging_and_a_hostile_reason_stays_text(log_in, live_server, page, viewer, instrument):
    hostile = '<img src=x onerror="window.__pwned = 1">'
    failed = _runs(instrument, 55, status="failed", failure_reason=hostile)
    _runs(instrument, 10, status="completed")
    log_in("vera")
    page.goto(f"{live_server.url}/runs/")

    page.select_option("#filter-status", "failed")
    page.click("button.filter-apply")
    assert "55 runs · page 1 of 2" in page.locator("#runs-total").inner_text()
    page.click("#runs-pager a[rel=next]")

    assert "status=failed" in page.url and "page=2" in page.url
    assert page.locator("#filter-status").input_value() == "failed"
    shown = page.locator("#runs tbody tr")
    assert shown.count() == 5
    assert {int(shown.nth(i).get_attribute("data-run")) for i in range(5)} <= {run.pk for run in failed}
    page.wait_for_timeout(3_500)  # a live redraw has run: the reason it placed is text too
    assert page.evaluate("window.__pwned === undefined")
    assert hostile[:20] in shown.first.locator(".muted").inner_text()
