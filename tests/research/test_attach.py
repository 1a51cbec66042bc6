"""A person attaches a shortlisted candidate to a strategy as a research signal: the pipeline's
evidence then carries the signal's reading as of the run's date, computed from stored bars up to that
date only, with the session's figures; detaching removes it from the next run on. Both are audited,
and only an approver may do either."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db.models import F

from research.attach import signal_attach, signal_detach
from research.models import ResearchTrial
from research.signals import SIGNALS, Bars
from tests.conftest import make_bars
from tests.factories import PipelineRunFactory
from tests.research import web_rows
from trading.market.research_signals import readings, register_reader, registered_reader
from trading.models import AuditEvent, DailyBar, ResearchSignal, Strategy, StrategyRun
from trading.pipeline.research_evidence import research_evidence
from vocabulary.refusals import InputRefused, NotAllowed, StateConflict

pytestmark = pytest.mark.django_db


@pytest.fixture
def strategy(instrument) -> Strategy:
    made = Strategy.objects.create(name="Trend desk", philosophy="Follow established trends in large caps.")
    made.universe.add(instrument)
    return made


@pytest.fixture
def shortlisted(approver):
    research = web_rows.finished_session(approver)
    return research.candidates.select_related("trial", "session").get(rank=1)


@pytest.fixture
def bars(instrument):
    make_bars(instrument, 320, seed=3)
    return list(DailyBar.objects.filter(instrument=instrument).order_by("date"))


def run_on(strategy: Strategy, instrument, as_of: dt.date):
    strategy_run = StrategyRun.objects.create(strategy=strategy, as_of=as_of)
    return PipelineRunFactory(instrument=instrument, as_of=as_of, strategy_run=strategy_run)


def test_an_approver_attaches_a_candidate_and_it_is_audited(approver, strategy, shortlisted):
    signal = signal_attach(candidate=shortlisted, strategy_id=strategy.pk, user=approver, reason="trend filter")

    trial = shortlisted.trial
    assert signal.strategy_id == strategy.pk and signal.detached_at is None
    assert signal.signal == "sma_crossover" and signal.params == trial.params
    assert signal.name == f"sma_crossover(fast={trial.params['fast']}, slow={trial.params['slow']})"
    assert signal.figures["dsr"] == trial.dsr and signal.figures["oos_sharpe"] == trial.oos_sharpe
    assert signal.figures["holdout"] == shortlisted.holdout_metrics and signal.figures["pbo"] == 0.25
    assert signal.candidate_ref == shortlisted.pk and f"trial {trial.number}" in signal.source
    event = AuditEvent.objects.get(action="research_signal_attached")
    assert event.actor == approver and event.reason == "trend filter" and event.target == f"strategy {strategy.pk}"
    assert event.details["signal_id"] == signal.pk


def test_a_viewer_may_not_attach_or_detach(viewer, approver, strategy, shortlisted):
    with pytest.raises(NotAllowed):
        signal_attach(candidate=shortlisted, strategy_id=strategy.pk, user=viewer)
    assert not ResearchSignal.objects.exists()

    signal = signal_attach(candidate=shortlisted, strategy_id=strategy.pk, user=approver)
    with pytest.raises(NotAllowed):
        signal_detach(signal_id=signal.pk, user=viewer)
    signal.refresh_from_db()
    assert signal.detached_at is None
    assert not AuditEvent.objects.filter(action="research_signal_detached").exists()


def test_the_same_signal_is_attached_once(approver, strategy, shortlisted):
    signal_attach(candidate=shortlisted, strategy_id=strategy.pk, user=approver)

    with pytest.raises(StateConflict, match="already attached"):
        signal_attach(candidate=shortlisted, strategy_id=strategy.pk, user=approver)
    assert ResearchSignal.objects.count() == 1
    assert AuditEvent.objects.filter(action="research_signal_attached").count() == 1


def test_generated_code_unknown_strategies_and_retired_ones_are_refused(approver, strategy, shortlisted):
    ResearchTrial.objects.filter(pk=shortlisted.trial_id).update(kind=ResearchTrial.Kind.CODE, strategy="MyIdea")
    shortlisted.trial.refresh_from_db()
    with pytest.raises(InputRefused, match="generated code"):
        signal_attach(candidate=shortlisted, strategy_id=strategy.pk, user=approver)

    ResearchTrial.objects.filter(pk=shortlisted.trial_id).update(kind=ResearchTrial.Kind.TUNE, strategy="sma_crossover")
    shortlisted.trial.refresh_from_db()
    with pytest.raises(InputRefused, match="no strategy 999999"):
        signal_attach(candidate=shortlisted, strategy_id=999999, user=approver)
    Strategy.objects.filter(pk=strategy.pk).update(is_active=False)
    with pytest.raises(StateConflict, match="not active"):
        signal_attach(candidate=shortlisted, strategy_id=strategy.pk, user=approver)
    assert not ResearchSignal.objects.exists()


def test_detaching_is_one_call_audited_and_happens_once(approver, strategy, shortlisted):
    signal = signal_attach(candidate=shortlisted, strategy_id=strategy.pk, user=approver)

    detached = signal_detach(signal_id=signal.pk, user=approver)

    assert detached.detached_at is not None and detached.detached_by == approver
    assert AuditEvent.objects.filter(action="research_signal_detached", details__signal_id=signal.pk).count() == 1
    with pytest.raises(StateConflict, match="already detached"):
        signal_detach(signal_id=signal.pk, user=approver)
    # Detached, it may be attached again: the constraint only binds attached rows.
    again = signal_attach(candidate=shortlisted, strategy_id=strategy.pk, user=approver)
    assert again.pk != signal.pk


def test_the_reading_is_the_signals_own_as_of_the_runs_date(approver, strategy, shortlisted, instrument, bars):
    as_of = bars[249].date
    signal_attach(candidate=shortlisted, strategy_id=strategy.pk, user=approver)

    evidence = research_evidence(run_on(strategy, instrument, as_of))

    assert len(evidence) == 1
    entry = evidence[0]
    assert entry["error"] == "" and entry["as_of"] == as_of.isoformat() and entry["bars_through"] == as_of.isoformat()
    upto = [bar for bar in bars if bar.date <= as_of]
    expected = SIGNALS["sma_crossover"](**shortlisted.trial.params).reading(
        Bars.from_rows(instrument.symbol, upto, tick=instrument.tick_size)
    )
    assert entry["reading"] == expected
    assert entry["reading"]["position"] in (-1, 0, 1)
    trial = shortlisted.trial
    assert entry["figures"]["dsr"] == trial.dsr
    assert entry["figures"]["oos"] == trial.oos_metrics
    assert entry["figures"]["holdout"] == shortlisted.holdout_metrics


def test_perturbing_later_bars_leaves_the_reading_unchanged(approver, strategy, shortlisted, instrument, bars):
    as_of = bars[249].date
    signal_attach(candidate=shortlisted, strategy_id=strategy.pk, user=approver)
    run = run_on(strategy, instrument, as_of)
    before = research_evidence(run)

    DailyBar.objects.filter(instrument=instrument, date__gt=as_of).update(
        open=F("open") * 3, high=F("high") * 3, low=F("low") * 3, close=F("close") * 3
    )
    DailyBar.objects.filter(instrument=instrument, date__gt=as_of, date__lte=bars[260].date).delete()

    assert research_evidence(run) == before


def test_detaching_removes_the_signal_from_the_evidence(approver, strategy, shortlisted, instrument, bars):
    signal = signal_attach(candidate=shortlisted, strategy_id=strategy.pk, user=approver)
    run = run_on(strategy, instrument, bars[-1].date)
    assert [entry["signal_id"] for entry in research_evidence(run)] == [signal.pk]

    signal_detach(signal_id=signal.pk, user=approver)

    assert research_evidence(run) == []


def test_a_run_outside_a_strategy_or_of_another_strategy_has_no_research_evidence(
    approver, strategy, shortlisted, instrument, bars
):
    signal_attach(candidate=shortlisted, strategy_id=strategy.pk, user=approver)
    other = Strategy.objects.create(name="Other desk", philosophy="Something else.")

    assert research_evidence(PipelineRunFactory(instrument=instrument, as_of=bars[-1].date)) == []
    assert research_evidence(run_on(other, instrument, bars[-1].date)) == []


def test_a_signal_that_cannot_be_read_is_listed_with_the_reason(approver, strategy, shortlisted, instrument, bars):
    signal = signal_attach(candidate=shortlisted, strategy_id=strategy.pk, user=approver)
    ResearchSignal.objects.filter(pk=signal.pk).update(params={"fast": 1000, "slow": 50})

    [entry] = readings(strategy.pk, instrument, bars[-1].date)

    assert entry["reading"] is None and "could not be read" in entry["error"]
    [early] = readings(strategy.pk, instrument, bars[0].date - dt.timedelta(days=3))
    assert early["reading"] is None and early["error"] == "no bars on or before the as-of date"


def test_the_research_app_installs_its_reader():
    from research.desk_signals import read_signal

    assert registered_reader() is read_signal
    register_reader(read_signal)  # registering again keeps one
    assert registered_reader() is read_signal


class _Recording:
    """The offline model, keeping every request it answered."""

    provider = "offline"

    def __init__(self) -> None:
        from agents.roles import OfflineModel

        self.inner = OfflineModel()
        self.requests: list = []

    def complete(self, request, *, model):
        self.requests.append(request)
        return self.inner.complete(request, model=model)


def test_a_strategy_run_shows_the_technical_analyst_the_attached_signal(
    approver, strategy, shortlisted, instrument, bars, monkeypatch
):
    from agents.domain.llm import ModelChoice
    from trading.models import PipelineRun, StageRun
    from trading.pipeline.orchestrator import pipeline_run_create, pipeline_run_execute

    client = _Recording()
    choice = ModelChoice(client=client, default_model="offline-rules", deep_model="offline-rules")
    monkeypatch.setattr("trading.pipeline.orchestrator.model_choice", lambda provider, symbol: choice)
    signal = signal_attach(candidate=shortlisted, strategy_id=strategy.pk, user=approver)
    as_of = bars[-1].date
    run = pipeline_run_create(instrument=instrument, as_of=as_of, provider="offline")
    PipelineRun.objects.filter(pk=run.pk).update(
        strategy_run=StrategyRun.objects.create(strategy=strategy, as_of=as_of)
    )

    done = pipeline_run_execute(run.pk)

    assert done is not None and done.failure_reason == "", (done.status, done.failure_reason)
    context = StageRun.objects.get(run=run, stage="context").output
    [entry] = context["research_signals"]
    assert entry["signal_id"] == signal.pk and entry["reading"] is not None
    technical = next(request for request in client.requests if request.role == "technical")
    assert technical.evidence["research_signals"][0]["name"] == signal.name
    assert "research signals attached to this strategy" in technical.prompt
    assert signal.name in technical.prompt
    # The other analysts who were asked never see it: the signal is the technical analyst's evidence.
    others = [request for request in client.requests if request.role in ("news", "sentiment", "fundamental")]
    assert all("research_signals" not in request.evidence for request in others)
