"""A critique never stalls trading. A live strategy run whose critique fired waits for it at most the
deadline, then proceeds under the directive already in force; a slow critic finds the run gone on
without it (marked late), a failing one is visible on the run, and the run proceeds exactly once
however the critique's end and the deadline meet. No clock is read: the deadline task is driven
directly, as the worker would run it when its countdown ends."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from celery import Celery

from agents.domain.llm import ModelChoice, ModelReply, ModelRequest
from agents.roles import OfflineModel
from reviews import tasks as review_tasks
from reviews.critique import trigger
from reviews.models import Critique
from trading.models import AuditEvent, PipelineRun, Strategy, StrategyDirective, StrategyRun
from trading.strategies import tasks as strategy_tasks
from trading.strategies.replay import ApprovalPolicy, replay_strategy
from trading.strategies.runs import strategy_run_start, strategy_runs_overdue_proceed

State = StrategyRun.CritiqueState


class Sent:
    """Celery's send_task, recorded instead of sent; ``refuse`` names tasks the broker refuses."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[Any], dict[str, Any], float | None]] = []
        self.refuse: set[str] = set()

    def __call__(self, name: str, args: Any = None, kwargs: Any = None, **options: Any) -> None:
        if name in self.refuse:
            raise ConnectionError("broker unreachable")
        self.calls.append((name, list(args or []), dict(kwargs or {}), options.get("countdown")))

    def named(self, name: str) -> list[tuple[str, list[Any], dict[str, Any], float | None]]:
        return [call for call in self.calls if call[0] == name]


@pytest.fixture
def sent(monkeypatch) -> Sent:
    recorder = Sent()

    def send_task(app: Celery, name: str, args: Any = None, kwargs: Any = None, **options: Any) -> None:
        recorder(name, args, kwargs, **options)

    monkeypatch.setattr(Celery, "send_task", send_task)
    return recorder


@pytest.fixture
def critiqued(instrument_with_bars, roomy_account, settings) -> Strategy:
    """A strategy whose every run fires a critique, with an advisory already in force."""
    settings.CRITIQUE = {**settings.CRITIQUE, "ENABLED": True, "MIN_RUNS": 0, "PROBABILITY": 1.0, "ADAPTIVE": False}
    settings.CRITIQUE["DEADLINE_SECONDS"] = 120.0
    strategy = Strategy.objects.create(name="swing", philosophy="Trend swings on large caps.")
    strategy.universe.set([instrument_with_bars])
    return strategy


def _in_force(strategy: Strategy, as_of: dt.date) -> StrategyDirective:
    earlier = Critique.objects.create(strategy=strategy, sequence=1, run_count=1, as_of=as_of, status="done")
    return StrategyDirective.objects.create(
        strategy=strategy,
        source_ref=earlier.pk,
        sequence=1,
        severity="advisory",
        text="Critique #1: log signal ICs before the next momentum trade.",
        opened_on=as_of,
    )


def _critic(monkeypatch, behaviour: Callable[[ModelRequest, str], ModelReply]) -> None:
    class Critic:
        provider = "offline"

        def complete(self, request: ModelRequest, *, model: str) -> ModelReply:
            return behaviour(request, model)

    choice = ModelChoice(client=Critic(), default_model="offline-rules", deep_model="offline-rules")
    monkeypatch.setattr("reviews.critique.service.model_choice", lambda provider, symbol: choice)


def _start(strategy: Strategy, django_capture_on_commit_callbacks) -> StrategyRun:
    as_of = strategy.universe.get().bars.latest("date").date
    with django_capture_on_commit_callbacks(execute=True):
        return strategy_run_start(strategy=strategy, as_of=as_of)


def _deadline(sent: Sent, strategy_run: StrategyRun) -> bool:
    """The deadline task, run as the worker runs it when its countdown ends."""
    [(_, args, kwargs, countdown)] = sent.named("trading.strategy_run_proceed")
    assert args == [strategy_run.pk] and countdown == 120.0
    return strategy_tasks.strategy_run_proceed(*args, **kwargs)


def test_a_fired_critique_is_sent_to_a_worker_and_the_run_waits_for_it(
    critiqued, sent, django_capture_on_commit_callbacks
):
    strategy_run = _start(critiqued, django_capture_on_commit_callbacks)

    critique = Critique.objects.get(strategy_run=strategy_run)
    assert strategy_run.critique_decision == StrategyRun.CritiqueDecision.FIRED
    assert strategy_run.critique_state == State.PENDING and strategy_run.critique_ref == critique.pk
    assert "fixed probability 100.0%: fired" in strategy_run.critique_reason
    assert critique.sequence == 1 and critique.run_count == 1 and critique.trigger["fired"] is True
    assert sent.named("reviews.run_critique") == [("reviews.run_critique", [critique.pk], {}, None)]
    assert strategy_run.proceeded_at is None and not strategy_run.pipeline_runs.exists()


def test_a_slow_critic_finds_the_run_gone_on_at_its_deadline_under_the_directive_in_force(
    critiqued, sent, monkeypatch, django_capture_on_commit_callbacks
):
    as_of = critiqued.universe.get().bars.latest("date").date
    in_force = _in_force(critiqued, as_of)
    strategy_run = _start(critiqued, django_capture_on_commit_callbacks)
    offline = OfflineModel()
    proceeded_meanwhile: list[bool] = []

    def slow(request: ModelRequest, model: str) -> ModelReply:
        # The critic is still thinking when the deadline passes.
        proceeded_meanwhile.append(_deadline(sent, strategy_run))
        return offline.complete(request, model=model)

    _critic(monkeypatch, slow)

    result = review_tasks.run_critique(strategy_run.critique_ref)

    strategy_run.refresh_from_db()
    critique = Critique.objects.get(pk=strategy_run.critique_ref)
    assert proceeded_meanwhile == [True]
    assert critique.status == Critique.Status.DONE and result["status"] == "done"
    assert strategy_run.critique_state == State.LATE
    assert strategy_run.directives_seen == [in_force.pk]  # the critique's own directive came too late for it
    assert PipelineRun.objects.filter(strategy_run=strategy_run).count() == 1  # proceeded once, not twice
    proceeded = AuditEvent.objects.filter(action="strategy_run_proceeded", target=f"strategy run {strategy_run.pk}")
    assert [event.reason for event in proceeded] == [
        "the critique's deadline passed; the critique was still running and is now late"
    ]


def test_a_failing_critic_is_visible_and_the_run_proceeds_at_once(
    critiqued, sent, monkeypatch, django_capture_on_commit_callbacks
):
    as_of = critiqued.universe.get().bars.latest("date").date
    in_force = _in_force(critiqued, as_of)
    strategy_run = _start(critiqued, django_capture_on_commit_callbacks)

    def failing(request: ModelRequest, model: str) -> ModelReply:
        raise RuntimeError("the critic's provider is down")

    _critic(monkeypatch, failing)

    review_tasks.run_critique(strategy_run.critique_ref)

    strategy_run.refresh_from_db()
    critique = Critique.objects.get(pk=strategy_run.critique_ref)
    assert critique.status == Critique.Status.FAILED and critique.error
    assert strategy_run.critique_state == State.FAILED
    assert strategy_run.proceeded_at is not None and strategy_run.directives_seen == [in_force.pk]
    assert PipelineRun.objects.filter(strategy_run=strategy_run).count() == 1
    assert _deadline(sent, strategy_run) is False  # the deadline finds it gone on: nothing twice
    assert PipelineRun.objects.filter(strategy_run=strategy_run).count() == 1


def test_a_critique_the_broker_refuses_fails_and_the_run_proceeds_at_once(
    critiqued, sent, django_capture_on_commit_callbacks
):
    sent.refuse.add("reviews.run_critique")

    strategy_run = _start(critiqued, django_capture_on_commit_callbacks)

    strategy_run.refresh_from_db()
    critique = Critique.objects.get(strategy_run=strategy_run)
    assert critique.status == Critique.Status.FAILED and "the task queue refused it" in critique.error
    assert strategy_run.critique_state == State.FAILED and strategy_run.pipeline_runs.count() == 1


def test_a_deadline_that_cannot_be_scheduled_proceeds_at_once(critiqued, sent, django_capture_on_commit_callbacks):
    sent.refuse.add("trading.strategy_run_proceed")

    strategy_run = _start(critiqued, django_capture_on_commit_callbacks)

    strategy_run.refresh_from_db()
    assert strategy_run.proceeded_at is not None and strategy_run.critique_state == State.LATE
    assert strategy_run.pipeline_runs.count() == 1


def test_a_lost_deadline_is_caught_by_the_sweep(critiqued, sent, django_capture_on_commit_callbacks):
    strategy_run = _start(critiqued, django_capture_on_commit_callbacks)
    StrategyRun.objects.filter(pk=strategy_run.pk).update(created_at=strategy_run.created_at - dt.timedelta(hours=1))

    assert strategy_runs_overdue_proceed() == [strategy_run.pk]
    assert strategy_runs_overdue_proceed() == []
    assert strategy_run.pipeline_runs.count() == 1


def test_a_broken_pre_step_is_recorded_and_trading_goes_on(
    critiqued, sent, monkeypatch, django_capture_on_commit_callbacks
):
    def broken(strategy_run: StrategyRun) -> Any:
        raise ValueError("no such signal")

    monkeypatch.setattr(trigger, "trigger_decide", broken)

    strategy_run = _start(critiqued, django_capture_on_commit_callbacks)

    assert strategy_run.critique_state == State.FAILED
    assert "the critique pre-step failed: ValueError: no such signal" in strategy_run.critique_reason
    assert strategy_run.pipeline_runs.count() == 1 and not Critique.objects.exists()


def test_the_first_runs_are_exempt_and_say_so(critiqued, sent, settings, django_capture_on_commit_callbacks):
    settings.CRITIQUE["MIN_RUNS"] = 10

    strategy_run = _start(critiqued, django_capture_on_commit_callbacks)

    assert strategy_run.critique_decision == StrategyRun.CritiqueDecision.EXEMPT
    assert "run 1 of the first 10: exempt" in strategy_run.critique_reason
    assert strategy_run.pipeline_runs.count() == 1
    assert not sent.named("reviews.run_critique") and not sent.named("trading.strategy_run_proceed")


def test_a_lost_race_for_a_sequence_takes_the_next_number(critiqued, monkeypatch):
    as_of = critiqued.universe.get().bars.latest("date").date
    Critique.objects.create(strategy=critiqued, sequence=1, run_count=1, as_of=as_of)
    strategy_run = StrategyRun.objects.create(strategy=critiqued, as_of=as_of)
    numbers = iter([1, 2])  # the first read is stale: another run took 1 meanwhile
    monkeypatch.setattr(trigger, "_next_sequence", lambda run: next(numbers))
    decision = trigger.decide(11, strategy_id=critiqued.pk, config=trigger.AdaptiveSettings(probability=1.0))

    critique = trigger.critique_create(strategy_run, decision)

    assert critique.sequence == 2
    assert trigger.critique_create(strategy_run, decision) == critique  # delivered twice: one critique


def test_a_replays_failing_critique_runs_in_process_and_the_replay_goes_on(critiqued, monkeypatch):
    def failing(request: ModelRequest, model: str) -> ModelReply:
        raise RuntimeError("the critic's provider is down")

    _critic(monkeypatch, failing)
    days = list(critiqued.universe.get().bars.order_by("-date").values_list("date", flat=True)[:3])[::-1]

    replayed = list(
        replay_strategy(strategy=critiqued, start=days[0], end=days[-1], policy=ApprovalPolicy.parse("all"))
    )

    runs = StrategyRun.objects.filter(strategy=critiqued, is_replay=True).order_by("as_of")
    assert len(replayed) == 3 and all(day.decision in {"hold", "rebalance"} for day in replayed)
    assert [run.critique_state for run in runs] == [State.FAILED] * 3
    assert [run.proceeded_at is not None for run in runs] == [True] * 3
    assert list(Critique.objects.filter(strategy=critiqued, is_replay=True).values_list("sequence", flat=True)) == [
        3,
        2,
        1,
    ]

    list(replay_strategy(strategy=critiqued, start=days[-1], end=days[-1], policy=ApprovalPolicy.parse("all")))

    # A new replay starts from a clean slate: the earlier replay's critiques are gone.
    assert list(Critique.objects.filter(strategy=critiqued, is_replay=True).values_list("sequence", flat=True)) == [1]
