"""Replay jobs: started with a clear refusal when they cannot run, claimed once, watched day by day,
cancelled between days and resumed after the last finished one with the same end as a replay
that was never interrupted."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from celery import Celery
from django.core.management import CommandError, call_command

from reviews.models import TradeReview
from tests.conftest import make_bars
from trading.book.accounts import default_account, replay_account
from trading.models import Account, AuditEvent, Instrument, Order, Position, ReplayJob, Strategy, StrategyRun, Thesis
from trading.strategies import replay_jobs
from trading.strategies.replay_jobs import (
    replay_job_cancel,
    replay_job_create,
    replay_job_progress,
    replay_job_resume,
    replay_job_run,
)
from vocabulary.refusals import InputRefused, StateConflict


@pytest.fixture
def sent(monkeypatch) -> list[dict[str, Any]]:
    """Celery's send_task, recorded instead of sent."""
    calls: list[dict[str, Any]] = []

    def send_task(app: Celery, name: str, args: Any = None, kwargs: Any = None, **options: Any) -> None:
        calls.append({"name": name, "args": args, **options})

    monkeypatch.setattr(Celery, "send_task", send_task)
    return calls


@pytest.fixture
def strategy(instrument_with_bars, settings) -> Strategy:
    settings.BROKER = {**settings.BROKER, "FILL_POLICY": "next_open"}
    tcs = Instrument.objects.create(symbol="TCS", exchange="NSE", name="Tata Consultancy Services", sector="IT")
    make_bars(tcs, 320, seed=9, first_close=3500.0)
    live = default_account()
    Account.objects.filter(pk=live.pk).update(max_notional_pct=Decimal("60"), exposure_cap_pct=Decimal("300"))
    strategy = Strategy.objects.create(name="swing", philosophy="Trend swings on large caps, 2R targets.")
    strategy.universe.set([instrument_with_bars, tcs])
    return strategy


def window(instrument, first: int, last: int):
    dates = list(instrument.bars.order_by("date").values_list("date", flat=True))
    return dates[first], dates[last]


def replay_record(strategy: Strategy) -> dict[str, list]:
    """Everything a replay leaves that a person reads: every thesis, order, position (PnL to the
    paisa), review and day's decision, and the account's cash."""
    runs = {"run__strategy_run__strategy": strategy, "run__is_replay": True}
    account = replay_account(strategy.name)
    return {
        "theses": list(
            Thesis.objects.filter(**runs)
            .order_by("run__as_of", "instrument__symbol")
            .values_list(
                "run__as_of",
                "instrument__symbol",
                "direction",
                "conviction",
                "entry",
                "stop",
                "target",
                "horizon_sessions",
                "quantity",
                "risk_amount",
                "notional",
                "risk_approved",
                "risk_checks",
                "warnings",
                "status",
            )
        ),
        "orders": list(
            Order.objects.filter(account=account)
            .order_by("placed_on", "instrument__symbol")
            .values_list(
                "instrument__symbol",
                "side",
                "quantity",
                "status",
                "placed_on",
                "fill_price",
                "reference_price",
                "filled_on",
                "costs_total",
            )
        ),
        "positions": list(
            Position.objects.filter(account=account)
            .order_by("opened_on", "instrument__symbol")
            .values_list(
                "instrument__symbol",
                "direction",
                "quantity",
                "entry_price",
                "entry_costs",
                "opened_on",
                "status",
                "exit_price",
                "exit_costs",
                "closed_on",
                "exit_reason",
                "realised_pnl",
                "unrealised_pnl",
                "last_mark",
            )
        ),
        "reviews": list(
            TradeReview.objects.filter(position__account=account)
            .order_by("position__opened_on", "position__instrument__symbol")
            .values_list("outcome", "realised_pnl", "signal_evolution", "thesis_vs_outcome", "critique", "lessons")
        ),
        "days": list(
            StrategyRun.objects.filter(strategy=strategy, is_replay=True)
            .order_by("as_of")
            .values_list("as_of", "decision", "decision_reason", "critique_decision", "critique_state")
        ),
        "cash": [Account.objects.get(pk=account.pk).cash],
    }


# --- creating ------------------------------------------------------------------------------------


def test_a_job_is_created_audited_and_sent_to_a_worker_once_committed(
    strategy, instrument_with_bars, approver, sent, django_capture_on_commit_callbacks
):
    start, end = window(instrument_with_bars, 250, 259)

    with django_capture_on_commit_callbacks(execute=True):
        job = replay_job_create(
            strategy=strategy, start=start, end=end, policy="all", provider="offline", user=approver
        )

    assert (job.status, job.days_total, job.days_done, job.created_by) == ("queued", 10, 0, approver)
    assert sent == [{"name": "trading.replay_job_run", "args": [job.pk], "task_id": job.task_id}]
    event = AuditEvent.objects.get(action="replay_job_created")
    assert event.actor == approver and event.details["sessions"] == 10 and event.details["policy"] == "all"


@pytest.mark.parametrize(
    ("policy", "provider", "span", "problem"),
    [
        ("most", "offline", (250, 259), "use all, none or conviction>=X"),
        ("all", "nobody", (250, 259), "unknown provider 'nobody'"),
        ("all", "offline", (259, 250), "after its end"),
    ],
)
def test_a_job_that_cannot_run_is_refused_with_why_and_nothing_is_created(
    strategy, instrument_with_bars, approver, sent, policy, provider, span, problem
):
    start, end = window(instrument_with_bars, *span)

    with pytest.raises(InputRefused, match=problem):
        replay_job_create(strategy=strategy, start=start, end=end, policy=policy, provider=provider, user=approver)

    assert not ReplayJob.objects.exists() and not sent


def test_a_window_without_sessions_is_refused(strategy, instrument_with_bars, approver):
    last = instrument_with_bars.bars.latest("date").date
    with pytest.raises(InputRefused, match="no bars between"):
        replay_job_create(
            strategy=strategy,
            start=last.replace(year=last.year + 1),
            end=last.replace(year=last.year + 2),
            policy="all",
            provider="offline",
            user=approver,
        )


def test_a_second_replay_of_a_strategy_waits_for_the_first(strategy, instrument_with_bars, approver, sent):
    start, end = window(instrument_with_bars, 250, 259)
    first = replay_job_create(strategy=strategy, start=start, end=end, policy="all", provider="offline", user=approver)

    with pytest.raises(StateConflict, match=f"already queued \\(job {first.pk}\\)"):
        replay_job_create(strategy=strategy, start=start, end=end, policy="none", provider="offline", user=approver)

    assert ReplayJob.objects.count() == 1


# --- running ---------------------------------------------------------------------------------------


def test_a_job_runs_once_records_each_day_and_ends_with_a_summary_of_the_stored_book(
    strategy, instrument_with_bars, approver, sent
):
    start, end = window(instrument_with_bars, 240, 262)
    job = replay_job_create(strategy=strategy, start=start, end=end, policy="all", provider="offline", user=approver)
    seen: list[tuple[int, str]] = []

    ended = replay_job_run(job.pk, on_day=lambda current, day: seen.append((current.days_done, str(day.as_of))))

    assert ended is not None and ended.status == "finished"
    assert [done for done, _ in seen] == list(range(1, 24))
    assert (ended.days_done, ended.last_day) == (23, end)
    account = replay_account(strategy.name)
    closed = Position.objects.filter(account=account, status="closed")
    assert ended.summary == {
        "runs": 46,
        "approved": Thesis.objects.filter(account=account, status="approved").count(),
        "positions": Position.objects.filter(account=account).count(),
        "closed": closed.count(),
        "realised_pnl": str(sum((p.realised_pnl for p in closed), Decimal("0.00"))),
    }
    assert ended.summary["approved"] > 0 and ended.summary["closed"] > 0
    assert replay_job_run(job.pk) is None  # a second delivery does nothing
    assert StrategyRun.objects.filter(strategy=strategy, is_replay=True).count() == 23
    assert replay_job_progress(ended)["percent"] == 100.0


def test_cancel_then_resume_ends_exactly_as_an_uninterrupted_replay(strategy, instrument_with_bars, approver, sent):
    start, end = window(instrument_with_bars, 240, 262)
    whole = replay_job_create(strategy=strategy, start=start, end=end, policy="all", provider="offline", user=approver)
    replay_job_run(whole.pk)
    uninterrupted = replay_record(strategy)
    assert uninterrupted["positions"] and uninterrupted["reviews"]

    job = replay_job_create(strategy=strategy, start=start, end=end, policy="all", provider="offline", user=approver)

    def cancel_on_day_nine(current: ReplayJob, day: Any) -> None:
        if current.days_done == 9:
            replay_job_cancel(current, approver, "need the CPU for a while")

    cancelled = replay_job_run(job.pk, on_day=cancel_on_day_nine)
    assert cancelled is not None
    assert (cancelled.status, cancelled.days_done) == ("cancelled", 9)
    assert StrategyRun.objects.filter(strategy=strategy, is_replay=True).count() == 9
    progress = replay_job_progress(cancelled)
    assert (progress["status"], progress["days_done"], progress["percent"]) == ("cancelled", 9, 39.1)
    assert AuditEvent.objects.filter(action="replay_job_cancelled", target=f"replay job {job.pk}").exists()

    resumed = replay_job_resume(cancelled, approver)
    assert resumed.status == "queued" and resumed.days_done == 9
    finished = replay_job_run(job.pk)

    assert finished is not None and finished.status == "finished" and finished.days_done == 23
    assert replay_record(strategy) == uninterrupted


def test_a_failed_day_leaves_nothing_and_a_resume_redoes_it(
    strategy, instrument_with_bars, approver, sent, monkeypatch
):
    start, end = window(instrument_with_bars, 240, 262)
    whole = replay_job_create(strategy=strategy, start=start, end=end, policy="all", provider="offline", user=approver)
    replay_job_run(whole.pk)
    uninterrupted = replay_record(strategy)

    job = replay_job_create(strategy=strategy, start=start, end=end, policy="all", provider="offline", user=approver)
    fail_on = window(instrument_with_bars, 249, 249)[0]
    from trading.strategies import runs

    real_decide = runs.strategy_run_decide

    def decide_or_break(strategy_run):
        if strategy_run.as_of == fail_on:
            raise RuntimeError("disk full")
        return real_decide(strategy_run)

    monkeypatch.setattr("trading.strategies.replay.strategy_run_decide", decide_or_break)
    failed = replay_job_run(job.pk)
    assert failed is not None
    assert (failed.status, failed.days_done, failed.error) == ("failed", 9, "RuntimeError: disk full")
    # The day that failed left nothing behind: its strategy run went with its transaction.
    assert not StrategyRun.objects.filter(strategy=strategy, is_replay=True, as_of=fail_on).exists()

    monkeypatch.setattr("trading.strategies.replay.strategy_run_decide", real_decide)
    replay_job_resume(failed, approver)
    assert replay_job_run(job.pk).status == "finished"
    assert replay_record(strategy) == uninterrupted


def test_only_a_stopped_job_resumes_and_only_an_active_one_cancels(strategy, instrument_with_bars, approver, sent):
    start, end = window(instrument_with_bars, 250, 252)
    job = replay_job_create(strategy=strategy, start=start, end=end, policy="all", provider="offline", user=approver)

    with pytest.raises(StateConflict, match="only a cancelled or failed replay"):
        replay_job_resume(job, approver)
    with pytest.raises(InputRefused, match="say why"):
        replay_job_cancel(job, approver, "  ")
    cancelled = replay_job_cancel(job, approver, "wrong window")
    # Nobody had started it: it is cancelled at once.
    assert cancelled.status == "cancelled" and cancelled.days_done == 0
    with pytest.raises(StateConflict, match="only a queued or running replay"):
        replay_job_cancel(cancelled, approver, "again")
    assert replay_job_run(job.pk) is None  # its message, delivered late, runs nothing


def test_a_resume_is_refused_once_a_newer_replay_cleared_the_account(strategy, instrument_with_bars, approver, sent):
    start, end = window(instrument_with_bars, 250, 252)
    old = replay_job_cancel(
        replay_job_create(strategy=strategy, start=start, end=end, policy="all", provider="offline", user=approver),
        approver,
        "wrong policy",
    )
    replay_job_run(
        replay_job_create(strategy=strategy, start=start, end=end, policy="none", provider="offline", user=approver).pk
    )

    with pytest.raises(StateConflict, match="cannot resume"):
        replay_job_resume(old, approver)


def test_progress_estimates_the_time_left_from_the_days_done(strategy, instrument_with_bars, approver, sent):
    start, end = window(instrument_with_bars, 250, 259)
    job = replay_job_create(strategy=strategy, start=start, end=end, policy="all", provider="offline", user=approver)
    assert replay_job_progress(job)["eta_seconds"] is None  # nothing done yet: no estimate
    estimates: list[float | None] = []

    def watch(current: ReplayJob, day: Any) -> None:
        estimates.append(replay_job_progress(current)["eta_seconds"])

    replay_job_run(job.pk, on_day=watch)

    assert all(isinstance(eta, float) and eta >= 0 for eta in estimates), estimates
    assert estimates[-1] == 0.0  # the last day done: nothing left


def test_the_command_resumes_a_cancelled_job_and_names_what_it_cannot_do(
    strategy, instrument_with_bars, approver, sent, capsys
):
    start, end = window(instrument_with_bars, 250, 254)
    job = replay_job_create(strategy=strategy, start=start, end=end, policy="all", provider="offline", user=approver)
    replay_job_cancel(job, approver, "later")

    call_command("replay", "--resume", str(job.pk))

    captured = capsys.readouterr()
    assert "Replayed swing over 5 session(s)" in captured.out
    assert "5/5" in captured.err and "left≈0s" in captured.err
    with pytest.raises(CommandError, match=f"replay job {job.pk} is finished"):
        call_command("replay", "--resume", str(job.pk))
    with pytest.raises(CommandError, match="no replay job 999999"):
        call_command("replay", "--resume", "999999")
    assert replay_jobs.TASK_NAME == "trading.replay_job_run"
