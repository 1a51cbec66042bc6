"""The binding gate: while a DIRECTIVE's required actions are incomplete the strategy decides HOLD
and none of its theses reaches approval, even when every model ignores the directive; the gate lifts
when code's checks pass and when an approver attests a free-form action; checkable prohibitions are
refused in code. Every completion, attestation and lift is audited."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence

import pytest

from agents.domain.llm import ModelChoice, ModelReply, ModelRequest
from agents.roles import OfflineModel
from reviews.critique.actions import action_attest, actions_check
from reviews.models import Critique, CritiqueAction
from trading.book.approvals import DecisionRefused, thesis_approve
from trading.models import AuditEvent, PipelineRun, StageRun, Strategy, StrategyDirective, StrategyRun, Thesis
from trading.pipeline.orchestrator import pipeline_run_execute
from trading.strategies.runs import strategy_run_decide, strategy_run_start
from vocabulary.refusals import InputRefused, NotAllowed, StateConflict

Kind = CritiqueAction.Kind


class IgnoresTheDirective:
    """The offline model, except that the manager and the trader claim a conviction of 0.99 and
    propose the trade whatever the prompt says about a directive."""

    provider = "offline"

    def __init__(self) -> None:
        self.inner = OfflineModel()
        self.roles: list[str] = []

    def complete(self, request: ModelRequest, *, model: str) -> ModelReply:
        self.roles.append(request.role)
        reply = self.inner.complete(request, model=model)
        if request.role not in {"manager", "trader"}:
            return reply
        body = json.loads(reply.text)
        body["conviction"] = 0.99
        return reply.model_copy(update={"text": json.dumps(body)})


@pytest.fixture
def hostile(monkeypatch) -> IgnoresTheDirective:
    client = IgnoresTheDirective()
    choice = ModelChoice(client=client, default_model="offline-rules", deep_model="offline-rules")
    monkeypatch.setattr("trading.pipeline.orchestrator.model_choice", lambda provider, symbol: choice)
    return client


@pytest.fixture
def strategy(instrument_with_bars, roomy_account, settings) -> Strategy:
    # The rows of the critique are made by hand here: the trigger stays out of the way.
    settings.CRITIQUE = {**settings.CRITIQUE, "ENABLED": False}
    strategy = Strategy.objects.create(name="swing", philosophy="Trend swings on large caps.")
    strategy.universe.set([instrument_with_bars])
    return strategy


def _sessions(strategy: Strategy) -> list[dt.date]:
    instrument = strategy.universe.get()
    return list(instrument.bars.order_by("-date").values_list("date", flat=True)[:5])[::-1]


def _issue(
    strategy: Strategy,
    as_of: dt.date,
    actions: Sequence[tuple[str, dict]],
    *,
    severity: str = "directive",
    prohibitions: list[dict] | None = None,
) -> tuple[Critique, StrategyDirective]:
    """A critique as the service leaves it: DONE, its actions, and the directive trading reads."""
    sequence = Critique.objects.filter(strategy=strategy).count() + 1
    critique = Critique.objects.create(
        strategy=strategy, sequence=sequence, run_count=11, as_of=as_of, status="done", severity=severity
    )
    rows = [
        CritiqueAction.objects.create(critique=critique, number=n, kind=kind, text=f"do {kind}", params=params)
        for n, (kind, params) in enumerate(actions, start=1)
    ]
    directive = StrategyDirective.objects.create(
        strategy=strategy,
        source_ref=critique.pk,
        sequence=sequence,
        severity=severity,
        text=f"Critique #{sequence}: hold until the actions are done.",
        prohibitions=prohibitions or [],
        blocking=[{"id": row.pk, "kind": row.kind, "text": row.text} for row in rows],
        opened_on=as_of,
    )
    return critique, directive


def _run_day(strategy: Strategy, as_of: dt.date, django_capture_on_commit_callbacks) -> StrategyRun:
    """A live strategy run, its pipeline runs executed here instead of by a worker."""
    with django_capture_on_commit_callbacks():  # the queue messages are not sent
        strategy_run = strategy_run_start(strategy=strategy, as_of=as_of)
    for run in strategy_run.pipeline_runs.all():
        pipeline_run_execute(run.pk)
    return strategy_run_decide(strategy_run)


def _audited(action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=action).order_by("pk"))


def test_a_blocking_directive_holds_the_run_whatever_the_model_says(
    strategy, hostile, django_capture_on_commit_callbacks
):
    day = _sessions(strategy)[-1]
    _, directive = _issue(strategy, day, [(Kind.FREE_FORM, {}), (Kind.STOP_CITING, {"code": "H-999"})])

    decided = _run_day(strategy, day, django_capture_on_commit_callbacks)

    run = PipelineRun.objects.get(strategy_run=decided)
    assert "trader" in hostile.roles  # the agents argued, and the model proposed its trade
    assert run.status == PipelineRun.Status.HELD
    assert "held by the strategy's critique" in run.failure_reason
    assert "action 1 (free_form): do free_form" in run.failure_reason
    assert not Thesis.objects.filter(run__strategy_run=decided).exists()
    assert decided.decision == StrategyRun.Decision.HOLD
    assert "critique directive #1 has 2 required action(s) incomplete" in decided.blocked_by
    assert "do stop_citing" in decided.blocked_by
    assert decided.directives_seen == [directive.pk]


def test_an_advisory_with_open_actions_does_not_hold(strategy, hostile, django_capture_on_commit_callbacks):
    day = _sessions(strategy)[-1]
    _issue(strategy, day, [(Kind.FREE_FORM, {})], severity="advisory")

    decided = _run_day(strategy, day, django_capture_on_commit_callbacks)

    assert decided.blocked_by == ""
    assert PipelineRun.objects.get(strategy_run=decided).status == PipelineRun.Status.COMPLETED


def test_an_earlier_pending_thesis_is_not_approved_while_the_strategy_is_held(
    strategy, hostile, approver, django_capture_on_commit_callbacks
):
    day = _sessions(strategy)[-1]
    decided = _run_day(strategy, day, django_capture_on_commit_callbacks)
    thesis = Thesis.objects.get(run__strategy_run=decided)
    assert thesis.status == Thesis.Status.PENDING and thesis.risk_approved
    _, directive = _issue(strategy, day, [(Kind.FREE_FORM, {})])

    with pytest.raises(DecisionRefused, match="held by its critique: critique directive #1"):
        thesis_approve(thesis=thesis, user=approver, comment="looks good")

    thesis.refresh_from_db()
    assert thesis.status == Thesis.Status.PENDING and not hasattr(thesis, "order")
    assert _audited("approval_refused")[-1].target == f"thesis {thesis.pk}"

    action = CritiqueAction.objects.get(critique_id=directive.source_ref)
    action_attest(action, user=approver, comment="reviewed the thesis sources by hand")
    order = thesis_approve(thesis=thesis, user=approver, comment="looks good")
    assert order.thesis_id == thesis.pk


def test_machine_checked_actions_lift_the_gate_once_they_pass(strategy, hostile, django_capture_on_commit_callbacks):
    first, second = _sessions(strategy)[-2:]
    critique, directive = _issue(strategy, first, [(Kind.STOP_CITING, {"code": "H-999"})])

    # Nothing has run since the critique: not cited, but not shown either. Still blocking.
    assert actions_check(strategy, is_replay=False, as_of=first) == []
    action = CritiqueAction.objects.get(critique=critique)
    assert action.status == CritiqueAction.Status.OPEN and "unproven" in action.check_detail

    held = _run_day(strategy, first, django_capture_on_commit_callbacks)  # held, but the agents had their say
    assert held.decision == StrategyRun.Decision.HOLD and held.blocked_by
    done = actions_check(strategy, is_replay=False, as_of=first)

    assert [a.pk for a in done] == [action.pk]
    action.refresh_from_db()
    directive.refresh_from_db()
    assert action.status == CritiqueAction.Status.DONE and "H-999 not cited by the 1 run(s)" in action.check_detail
    assert (
        directive.lifted_at is not None
        and "all 1 required action(s) of critique #1 complete" in directive.lifted_reason
    )
    assert _audited("critique_action_done")[-1].reason == action.check_detail
    assert _audited("directive_lifted")[-1].details["directive"] == directive.pk

    free = _run_day(strategy, second, django_capture_on_commit_callbacks)
    assert free.blocked_by == "" and free.directives_seen == []
    assert PipelineRun.objects.get(strategy_run=free).status == PipelineRun.Status.COMPLETED


def test_a_heuristic_still_cited_keeps_the_gate(strategy, hostile, django_capture_on_commit_callbacks):
    from trading.models import HeuristicCitation

    day = _sessions(strategy)[-1]
    critique, directive = _issue(strategy, day, [(Kind.STOP_CITING, {"code": "H-2"})])
    held = _run_day(strategy, day, django_capture_on_commit_callbacks)
    run = PipelineRun.objects.get(strategy_run=held)
    HeuristicCitation.objects.get_or_create(
        run=run, role="trader", code="H-2", defaults={"accepted": True, "cited_on": day}
    )

    assert actions_check(strategy, is_replay=False, as_of=day) == []
    action = CritiqueAction.objects.get(critique=critique)
    directive.refresh_from_db()
    assert f"H-2 still cited since the critique (run {run.pk})" in action.check_detail
    assert directive.is_blocking


def test_an_approver_attests_a_free_form_action_and_the_gate_lifts(
    strategy, hostile, approver, viewer, django_capture_on_commit_callbacks
):
    first, second = _sessions(strategy)[-2:]
    critique, directive = _issue(strategy, first, [(Kind.FREE_FORM, {}), (Kind.STOP_CITING, {"code": "H-999"})])
    free_form, checked = CritiqueAction.objects.filter(critique=critique).order_by("number")

    with pytest.raises(NotAllowed):
        action_attest(free_form, user=viewer, comment="I looked at it")
    with pytest.raises(InputRefused, match="needs a comment"):
        action_attest(free_form, user=approver, comment="   ")
    with pytest.raises(StateConflict, match="checked by code"):
        action_attest(checked, user=approver, comment="trust me")
    free_form.refresh_from_db()
    assert free_form.status == CritiqueAction.Status.OPEN and not _audited("critique_action_attested")

    attested = action_attest(free_form, user=approver, comment="rewrote the entry checklist with the desk")

    assert attested.status == CritiqueAction.Status.ATTESTED and attested.attested_by == approver
    assert attested.attestation == "rewrote the entry checklist with the desk"
    event = _audited("critique_action_attested")[-1]
    assert event.actor == approver and event.reason == attested.attestation
    directive.refresh_from_db()
    assert directive.is_blocking and [item["kind"] for item in directive.blocking] == [Kind.STOP_CITING]
    with pytest.raises(StateConflict, match="already attested"):
        action_attest(free_form, user=approver, comment="again")

    _run_day(strategy, first, django_capture_on_commit_callbacks)  # held; its notes prove H-999 is not cited
    actions_check(strategy, is_replay=False, as_of=first)
    directive.refresh_from_db()
    assert directive.lifted_at is not None

    free = _run_day(strategy, second, django_capture_on_commit_callbacks)
    assert free.blocked_by == ""


def test_a_prohibited_direction_is_refused_in_code_at_the_risk_stage(
    strategy, hostile, django_capture_on_commit_callbacks
):
    day = _sessions(strategy)[-1]
    with django_capture_on_commit_callbacks():
        strategy_run = strategy_run_start(strategy=strategy, as_of=day)
    run = strategy_run.pipeline_runs.get()
    pipeline_run_execute(run.pk, stop_after="trader")
    direction = StageRun.objects.get(run=run, stage="trader").output["thesis"]["direction"]
    _issue(
        strategy,
        day,
        [],
        severity="advisory",
        prohibitions=[{"kind": "direction", "value": direction, "text": "the trend call has been wrong"}],
    )

    pipeline_run_execute(run.pk)

    run.refresh_from_db()
    assert run.status == PipelineRun.Status.HELD
    assert f"critique #1 prohibits direction {direction} (the trend call has been wrong)" in run.failure_reason
    assert not Thesis.objects.filter(run=run).exists()


def test_a_prohibited_instrument_is_refused(strategy, hostile, django_capture_on_commit_callbacks):
    day = _sessions(strategy)[-1]
    symbol = strategy.universe.get().symbol
    _issue(strategy, day, [], severity="advisory", prohibitions=[{"kind": "instrument", "value": symbol, "text": "x"}])

    decided = _run_day(strategy, day, django_capture_on_commit_callbacks)

    run = PipelineRun.objects.get(strategy_run=decided)
    assert run.status == PipelineRun.Status.HELD and f"prohibits instrument {symbol}" in run.failure_reason


def test_a_replays_directive_binds_the_replay_only(strategy, hostile, django_capture_on_commit_callbacks):
    day = _sessions(strategy)[-1]
    critique, directive = _issue(strategy, day, [(Kind.FREE_FORM, {})])
    Critique.objects.filter(pk=critique.pk).update(is_replay=True)
    StrategyDirective.objects.filter(pk=directive.pk).update(is_replay=True)

    decided = _run_day(strategy, day, django_capture_on_commit_callbacks)

    assert decided.blocked_by == "" and decided.directives_seen == []


def test_the_next_runs_pre_step_checks_the_actions_again_and_runs_free(
    strategy, hostile, django_capture_on_commit_callbacks
):
    first, second = _sessions(strategy)[-2:]
    _, directive = _issue(strategy, first, [(Kind.STOP_CITING, {"code": "H-999"})])
    held = _run_day(strategy, first, django_capture_on_commit_callbacks)
    assert held.blocked_by  # nothing had run since the critique when this one started

    # Nobody calls the check: the next run's pre-step does, and the run reads the lifted gate.
    free = _run_day(strategy, second, django_capture_on_commit_callbacks)

    directive.refresh_from_db()
    assert directive.lifted_at is not None
    assert free.blocked_by == "" and free.directives_seen == []
    assert PipelineRun.objects.get(strategy_run=free).status == PipelineRun.Status.COMPLETED


def test_in_a_replay_the_policy_attests_a_free_form_action_the_session_after_it_was_issued(strategy):
    """Nobody can attest during a history replay: the replay's approver of record attests a free-form
    action on the next session (audited, saying so), so one such action cannot hold the rest of the
    replay; on the session that issued it the gate still holds, and machine checks stay bound."""
    from reviews.critique.trigger import REPLAY_ATTESTATION, on_strategy_run_opened
    from trading.strategies.replay import _policy_user

    first, second = _sessions(strategy)[-2:]
    critique, directive = _issue(strategy, first, [(Kind.FREE_FORM, {}), (Kind.STOP_CITING, {"code": "H-9"})])
    Critique.objects.filter(pk=critique.pk).update(is_replay=True)
    StrategyDirective.objects.filter(pk=directive.pk).update(is_replay=True)
    policy = _policy_user()

    same_day = StrategyRun.objects.create(strategy=strategy, as_of=first, is_replay=True)
    on_strategy_run_opened(same_day, replay=True)
    assert CritiqueAction.objects.get(critique=critique, number=1).status == CritiqueAction.Status.OPEN

    next_day = StrategyRun.objects.create(strategy=strategy, as_of=second, is_replay=True)
    on_strategy_run_opened(next_day, replay=True)

    free_form, checked = CritiqueAction.objects.filter(critique=critique).order_by("number")
    assert free_form.status == CritiqueAction.Status.ATTESTED and free_form.attested_by == policy
    assert free_form.attestation == REPLAY_ATTESTATION
    assert checked.status == CritiqueAction.Status.OPEN  # code's check still decides this one
    [event] = _audited("critique_action_attested")
    assert event.actor_label == policy.username
    directive.refresh_from_db()
    assert [entry["kind"] for entry in directive.blocking] == [Kind.STOP_CITING]


def test_a_conviction_cap_binds_the_calibrated_conviction_whatever_the_model_claims(
    strategy, hostile, django_capture_on_commit_callbacks
):
    """A calibrate_confidence action comes with a max_conviction code derived from the record; while
    the directive is in force code calibrates no conviction above it, however sure the model says it
    is (the hostile model claims 0.99), and keeps the model's number for audit."""
    from trading.models import DebateRecord

    day = _sessions(strategy)[-1]
    cap = {"kind": "max_conviction", "value": "0.30", "text": "a conviction above 0.30"}
    _issue(strategy, day, [(Kind.CALIBRATE_CONFIDENCE, {"max_gap": 0.1})], severity="advisory", prohibitions=[cap])

    decided = _run_day(strategy, day, django_capture_on_commit_callbacks)

    run = PipelineRun.objects.get(strategy_run=decided)
    debate = DebateRecord.objects.get(run=run)
    assert float(debate.conviction) <= 0.30
    calibration = StageRun.objects.get(run=run, stage="debate").output["calibration"]
    assert calibration["cap"] == 0.3 and calibration["capped_by"] == 1
    assert calibration["proposed"] == 0.99
    thesis = Thesis.objects.filter(run=run).first()
    assert thesis is None or float(thesis.conviction) <= 0.30
