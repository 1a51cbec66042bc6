"""The critique's gate in a real browser: a strategy held by a directive whose one required action is
free-form; an approver attests it on the critique page with a comment, and the strategy's next run is
no longer blocked — its decision is taken by the desk's own code, and the strategies page says so.
The archive's trajectory chart is drawn, nothing is fetched from off the machine and nothing is
refused by the Content-Security-Policy on the way."""

from __future__ import annotations

import datetime as dt

import pytest

from reviews.models import CritiqueAction
from tests.factories import PipelineRunFactory, ThesisFactory
from tests.reviews.critique.web_rows import FREE_FORM, critique_for, runs_for, strategy_named
from trading.models import StrategyDirective, StrategyRun
from trading.strategies.runs import strategy_run_decide

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

COMMENT = "The analysts now read the fundamentals family; see the desk note of 14 March."


def decided(strategy_run: StrategyRun) -> StrategyRun:
    """The run's one pipeline run finished with a risk-approved thesis; the strategy decides."""
    StrategyRun.objects.filter(pk=strategy_run.pk).update(decision=StrategyRun.Decision.PENDING)
    run = PipelineRunFactory(as_of=strategy_run.as_of, strategy_run=strategy_run)
    ThesisFactory(run=run, instrument=run.instrument)
    return strategy_run_decide(StrategyRun.objects.get(pk=strategy_run.pk))


def watch(page, live_server) -> tuple[list[str], list[str]]:
    off_machine: list[str] = []
    problems: list[str] = []
    page.on(
        "request",
        lambda request: off_machine.append(request.url) if not request.url.startswith(live_server.url) else None,
    )
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on(
        "console",
        lambda message: (
            problems.append(message.text)
            if message.type == "error" and not message.text.startswith("Failed to load resource")
            else None
        ),
    )
    return off_machine, problems


def test_an_approver_attests_an_action_and_the_next_run_is_no_longer_blocked(
    live_server, page, screenshot, log_in, approver
):
    strategy = strategy_named()
    held_run = runs_for(strategy, 12)[-1]
    critique_for(  # an earlier advisory, since lifted: two points on the trajectory
        strategy, run_count=10, severity="advisory", scores={"single_signal_fixation": 0.6}, issue_directive=False
    )
    critique = critique_for(
        strategy,
        sequence=2,
        strategy_run=held_run,
        scores={"single_signal_fixation": 0.8},
        diagnosis="Every thesis since run 1 rests on the sentiment family alone.",
        actions=[FREE_FORM],
    )
    action = critique.actions.get()
    assert decided(held_run).blocked_by, "the directive must hold the run before the attestation"
    off_machine, problems = watch(page, live_server)

    log_in(approver.username)
    page.goto(f"{live_server.url}/reviews/strategies/{strategy.pk}/critiques/")
    page.wait_for_selector("#trajectory-chart[data-rendered=true]", timeout=20_000)
    assert page.locator("#trajectory-chart g.trace").count() == 7
    screenshot("critique-archive")
    page.click(f"a[href='/reviews/critiques/{critique.pk}/']")

    assert "Blocking." in page.inner_text("#gate-state")
    page.fill(f"#comment-{action.pk}", COMMENT)
    page.click(f"#action-{action.number} button.attest")
    page.wait_for_selector(f"#action-{action.number}[data-status=attested]")
    assert f"Action {action.number} attested." in page.inner_text(".messages")
    assert COMMENT in page.inner_text(f"#action-{action.number} .attestation")
    assert page.inner_text("#gate-state").startswith("Lifted")
    screenshot("critique-attested")

    action.refresh_from_db()
    assert action.status == CritiqueAction.Status.ATTESTED and action.attested_by == approver
    assert StrategyDirective.objects.get(source_ref=critique.pk).lifted_at is not None

    next_run = StrategyRun.objects.create(
        strategy=strategy, as_of=held_run.as_of + dt.timedelta(days=1), decision=StrategyRun.Decision.PENDING
    )
    assert decided(next_run).decision == StrategyRun.Decision.REBALANCE

    page.goto(f"{live_server.url}/strategies/")
    gate = page.locator(f"#gate-{strategy.pk}")
    assert gate.get_attribute("data-gate") == "clear"
    assert "Not blocked" in gate.inner_text()
    rows = page.locator("#strategy-runs tbody tr")
    newest = rows.nth(0).inner_text().lower()  # the status pill is upper-cased by the stylesheet
    assert "rebalance" in newest and "held by" not in newest
    assert "held by the critique" in rows.nth(1).inner_text()  # the run the directive held, still saying why
    screenshot("critique-strategies-unblocked")

    assert off_machine == []
    assert problems == []
