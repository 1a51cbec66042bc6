"""The research services, task and commands on the database: a session created with every value
checked, run with trials written as they finish, cancelled between trials, audited; ``manage.py
research`` prints its table and ``manage.py research_replay`` reproduces the session."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from research.models import ResearchCandidate, ResearchSession, ResearchTrial
from research.services import session_cancel, session_create, session_run
from research.tasks import run_session
from tests.conftest import make_bars
from tests.factories.market import InstrumentFactory
from trading.models import AuditEvent
from vocabulary.refusals import InputRefused, NotAllowed, StateConflict

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def research_dirs(settings, tmp_path):
    settings.RESEARCH = {
        **settings.RESEARCH,
        "JOURNAL_DIR": str(tmp_path / "journals"),
        "CANDIDATES_DIR": str(tmp_path / "candidates"),
        "FOLDS": 4,
    }
    return tmp_path


@pytest.fixture
def universe(db):
    for seed, symbol in enumerate(("AAA", "BBB"), start=1):
        make_bars(InstrumentFactory(symbol=symbol), 420, seed=seed)
    return ["AAA", "BBB"]


def _create(universe, **options):
    values = {
        "goal": "a trend-following edge",
        "symbols": universe,
        "proposer": "llm",
        "provider": "offline",
        "max_trials": 8,
        "max_tokens": 100_000,
        "dry_rounds": 5,
    }
    return session_create(**{**values, **options})


def test_it_refuses_bad_values_with_a_reason_per_field_and_creates_nothing(universe):
    with pytest.raises(InputRefused) as refused:
        session_create(
            goal=" ",
            symbols=["NOPE"],
            proposer="genius",
            strategy="astrology",
            max_trials=0,
            max_tokens=-1,
            dry_rounds=0,
        )
    assert set(refused.value.details) == {
        "goal",
        "symbols",
        "proposer",
        "strategy",
        "max_trials",
        "max_tokens",
        "dry_rounds",
    }
    assert "unknown symbol 'NOPE'" in refused.value.message
    with pytest.raises(InputRefused, match="only the llm proposer writes code"):
        _create(universe, proposer="optuna", allow_code_gen=True)
    with pytest.raises(InputRefused, match="unknown provider"):
        _create(universe, provider="replay")
    assert not ResearchSession.objects.exists()


def test_it_refuses_a_symbol_with_too_few_bars(db):
    make_bars(InstrumentFactory(symbol="NEW"), 60)
    with pytest.raises(InputRefused, match="NEW has 60 daily bars; a session needs at least"):
        session_create(goal="g", symbols=["NEW"], proposer="fixed")


def test_a_session_runs_writes_its_trials_candidates_journal_and_audit(universe, settings):
    # Gates a random walk can pass, frozen into the session when it is created.
    settings.RESEARCH = {**settings.RESEARCH, "MIN_DSR": 0.0, "MIN_TRADES": 1, "MAX_DRAWDOWN": 1.0}
    session = _create(universe, dry_rounds=20)
    assert session.config["gates"]["min_dsr"] == 0.0
    seen = []
    done = session_run(session.pk, progress=lambda event: seen.append((event["event"], session.trials.count())))
    assert done.status == ResearchSession.Status.DONE, done.error
    trials = list(done.trials.order_by("number"))
    assert len(trials) == done.n_trials == 8, [(t.decision, t.reason) for t in trials]
    # Each trial's row existed when its progress event fired: a page polling sees them arrive.
    assert [count for event, count in seen if event == "trial"] == list(range(1, 9))
    assert done.holdout_start and done.data_start < done.holdout_start <= done.data_end
    assert done.tokens_used == sum(trial.tokens for trial in trials) > 0
    assert done.stop_reason == "trial budget: 8 trials"
    candidates = list(done.candidates.order_by("rank"))
    assert candidates
    for candidate in candidates:
        written = json.loads(Path(candidate.config_path).read_text())
        assert written["provenance"]["session"] == done.pk
        assert written["provenance"]["trial"] == candidate.trial.number
        assert written["holdout_metrics"] == candidate.holdout_metrics
        assert candidate.trial.decision == ResearchTrial.Decision.KEPT
    assert Path(done.journal_path).is_file()
    events = AuditEvent.objects.filter(target=f"research_session:{done.pk}").order_by("at", "pk")
    actions = list(events.values_list("action", flat=True))
    assert actions == ["research_session_started", "research_session_finished"]


def test_the_task_runs_a_queued_session_once(universe):
    session = _create(universe, proposer="fixed", max_trials=3)
    assert run_session(session.pk)["status"] == "done"
    assert run_session(session.pk)["status"] == "done"  # delivered twice: nothing runs again
    assert ResearchTrial.objects.filter(session=session).count() == 3
    assert run_session(999_999) == {"status": "gone", "session_id": 999_999}


def test_a_person_cancels_a_running_session_between_trials(universe, desk_admin):
    session = _create(universe, proposer="optuna", max_trials=10)

    def cancel_after_two(event):
        if event["event"] == "trial" and event["number"] == 2:
            session_cancel(ResearchSession.objects.get(pk=session.pk), user=desk_admin)

    done = session_run(session.pk, progress=cancel_after_two)
    assert done.status == ResearchSession.Status.CANCELLED
    assert done.trials.count() == 2
    assert not ResearchCandidate.objects.filter(session=done).exists()  # the holdout was never scored
    assert AuditEvent.objects.filter(action="research_session_cancelled", actor=desk_admin).exists()
    with pytest.raises(StateConflict):
        session_cancel(done, user=desk_admin)


def test_cancelling_needs_the_permission(universe, viewer):
    session = _create(universe)
    with pytest.raises(NotAllowed):
        session_cancel(session, user=viewer)
    assert ResearchSession.objects.get(pk=session.pk).status == ResearchSession.Status.QUEUED


def test_the_command_prints_a_table_and_the_replay_reproduces_it(universe):
    out = StringIO()
    call_command(
        "research",
        "--goal",
        "momentum in large caps",
        "--symbols",
        *universe,
        "--proposer",
        "optuna",
        "--max-trials",
        "6",
        "--seed",
        "4",
        stdout=out,
        stderr=StringIO(),
    )
    text = out.getvalue()
    session = ResearchSession.objects.get()
    assert f"Research session {session.pk}: done" in text
    assert "PBO over the trial matrix" in text and "Journal:" in text
    assert sum(1 for line in text.splitlines() if line[:3].strip().isdigit()) == 6
    replay = StringIO()
    call_command("research_replay", session.journal_path, stdout=replay)
    assert "all 6 decisions reproduced" in replay.getvalue()
    # The same seed, the same trajectory.
    call_command(
        "research",
        "--goal",
        "momentum in large caps",
        "--symbols",
        *universe,
        "--proposer",
        "optuna",
        "--max-trials",
        "6",
        "--seed",
        "4",
        stdout=StringIO(),
        stderr=StringIO(),
    )
    first, second = ResearchSession.objects.order_by("pk")
    fields = ("strategy", "params", "decision", "oos_sharpe", "dsr")
    assert list(first.trials.values_list(*fields)) == list(second.trials.values_list(*fields))


def test_the_replay_command_fails_on_an_edited_journal(universe):
    session = _create(universe, proposer="fixed", max_trials=3)
    session_run(session.pk)
    path = Path(ResearchSession.objects.get(pk=session.pk).journal_path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for event in lines:
        if event["event"] == "trial" and event["number"] == 2:
            event["oos_sharpe"] = 9.9
    path.write_text("".join(json.dumps(event) + "\n" for event in lines))
    with pytest.raises(CommandError, match=r"trial 2: oos_sharpe is 9\.9 in the journal"):
        call_command("research_replay", str(path), stdout=StringIO())


def test_the_command_refuses_bad_input_clearly(universe):
    with pytest.raises(CommandError, match="unknown symbol 'ZZZ'"):
        call_command("research", "--goal", "x", "--symbols", "ZZZ", stdout=StringIO(), stderr=StringIO())
