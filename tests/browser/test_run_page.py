from __future__ import annotations

import threading

import pytest

from trading.book.domain.risk import CHECK_NAMES
from trading.models import PipelineRun
from trading.pipeline.orchestrator import pipeline_run_execute

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_approver_starts_a_run_and_watches_its_stages_fill_in(
    log_in, live_server, page, screenshot, approver, instrument_with_bars, settings
):
    settings.LLM = {**settings.LLM, "OFFLINE_LATENCY_MS": 150.0}
    log_in("arjun")
    page.click("text=Runs")
    page.check("input[name=symbols][value=RELIANCE]")
    page.click("text=Queue runs")

    page.wait_for_selector("#run-status")
    assert page.locator("#run-status").inner_text().lower() == "queued"
    page.evaluate("window.__samePage = true")
    run = PipelineRun.objects.get()

    # The worker's part, played in a thread so the test needs no broker: the page must follow it.
    worker = threading.Thread(target=pipeline_run_execute, args=(run.pk,))
    worker.start()
    page.wait_for_selector('li.stage.done[data-stage="analysts"]', timeout=30_000)
    page.wait_for_selector("#risk", timeout=30_000)
    worker.join(timeout=30)

    assert page.evaluate("window.__samePage") is True
    assert page.locator("#run-status").inner_text().lower() == "completed"
    assert page.locator("section.note").count() == 4
    assert page.locator("#risk li").count() == len(CHECK_NAMES)
    screenshot("run-page")


def test_a_viewer_has_no_start_form(log_in, live_server, page, viewer, instrument_with_bars):
    log_in("vera")
    page.goto(f"{live_server.url}/runs/")

    assert page.locator("#start-runs").count() == 0
    assert "Pipeline runs" in page.content()
