"""The research page in a real browser: an approver starts a small session on seeded bars, its trials
arrive in the table while the page stays the same page (polled, no reload), and when the session ends
the PBO and the shortlist scored on the holdout appear, each candidate with its config to download.

The worker's part is played by a thread running the real service; it pauses after the second trial
until the page has shown both, so "arrives live" is checked without timing anything."""

from __future__ import annotations

import threading

import pytest

from research.models import ResearchSession
from research.services import session_run
from tests.browser.test_content_security_policy import RECORD_VIOLATIONS
from tests.conftest import make_bars

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TRIALS = 6


@pytest.fixture
def research_settings(settings, tmp_path):
    # Gates a random walk can pass, so the shortlist has something on it; folders of the test's own.
    settings.RESEARCH = {
        **settings.RESEARCH,
        "MIN_DSR": 0.0,
        "MIN_TRADES": 1,
        "MAX_DRAWDOWN": 1.0,
        "DRAWDOWN_GUARD": 1.0,
        "JOURNAL_DIR": str(tmp_path / "journals"),
        "CANDIDATES_DIR": str(tmp_path / "candidates"),
    }
    return settings


def test_an_approver_starts_a_session_and_watches_its_trials_arrive(
    log_in, live_server, page, screenshot, approver, instrument, research_settings, monkeypatch
):
    make_bars(instrument, 420, seed=5)
    queued: list[int] = []
    monkeypatch.setattr("research.start.queue_session", queued.append)  # the worker is played below
    page.add_init_script(RECORD_VIOLATIONS)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    log_in("arjun")
    page.click("nav >> text=Research")
    page.fill("#research-goal", "a moving-average trend follower for large caps")
    page.check("input[name=symbols][value=RELIANCE]")
    page.select_option("#research-strategy", "sma_crossover")
    page.select_option("#research-proposer", "optuna")
    page.fill("#research-max-trials", str(TRIALS))
    page.fill("#research-dry-rounds", str(TRIALS))
    page.click("text=Queue session")

    page.wait_for_selector("#session-status")
    assert page.locator("#session-status").inner_text().lower() == "queued"
    session = ResearchSession.objects.get()
    assert queued == [session.pk]
    page.evaluate("window.__samePage = true")

    shown, paused = threading.Event(), threading.Event()

    def pause_after_second(event: dict) -> None:
        if event.get("number") == 2:
            paused.set()
            shown.wait(timeout=60)

    worker = threading.Thread(target=session_run, args=(session.pk,), kwargs={"progress": pause_after_second})
    worker.start()
    try:
        assert paused.wait(timeout=60)
        page.wait_for_selector("#trial-2", timeout=30_000)
        assert page.locator("#trial-3").count() == 0
        assert page.locator("#session-status").inner_text().lower() == "running"
        assert page.locator("#dsr-chart[data-rendered=true]").count() == 1
    finally:
        shown.set()
    worker.join(timeout=120)

    page.wait_for_selector("#results[data-finished=true]", timeout=30_000)
    assert page.evaluate("window.__samePage") is True  # everything above arrived without a reload
    session.refresh_from_db()
    assert session.status == ResearchSession.Status.DONE, session.error
    assert page.locator("#session-status").inner_text().lower() == "done"
    assert page.locator("#trial-rows tr.trial").count() == session.trials.count()
    assert page.locator("#pbo").count() == 1
    candidates = session.candidates.count()
    assert candidates >= 1
    assert page.locator("#shortlist tbody tr").count() == candidates
    assert page.locator("#shortlist a[download]").count() == candidates

    page.locator("details.folds summary").first.click()
    assert page.locator("details.folds[open] table tbody tr").count() >= 2
    assert page.evaluate("window.__cspViolations") == [] and errors == []  # no inline script, no script error
    screenshot("research-session")


def test_a_viewer_has_no_start_form(log_in, live_server, page, viewer):
    log_in("vera")
    page.goto(f"{live_server.url}/research/")

    assert page.locator("#start-research").count() == 0
    assert "Research" in page.content()
