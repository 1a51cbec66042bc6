"""History replay: the live loop over past days, strictly as of each day, deterministic."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from tests.conftest import make_bars
from trading.book.accounts import default_account
from trading.models import Account, DailyBar, Instrument, Position, Strategy, StrategyRun, Thesis
from trading.pipeline.presenters import run_outputs
from trading.strategies.replay import ApprovalPolicy, replay_strategy


@pytest.fixture
def strategy(instrument_with_bars, settings):
    settings.BROKER = {**settings.BROKER, "FILL_POLICY": "next_open"}
    tcs = Instrument.objects.create(symbol="TCS", exchange="NSE", name="Tata Consultancy Services", sector="IT")
    make_bars(tcs, 320, seed=9, first_close=3500.0)
    live = default_account()
    Account.objects.filter(pk=live.pk).update(max_notional_pct=Decimal("60"), exposure_cap_pct=Decimal("300"))
    strategy = Strategy.objects.create(name="swing", philosophy="Trend swings on large caps, 2R targets.")
    strategy.universe.set([instrument_with_bars, tcs])
    return strategy


def _days(instrument, first: int, last: int):
    dates = list(instrument.bars.order_by("date").values_list("date", flat=True))
    return dates[first], dates[last]


def _record(strategy):
    theses = list(
        Thesis.objects.filter(run__strategy_run__strategy=strategy, run__is_replay=True)
        .order_by("run__as_of", "instrument__symbol")
        .values_list(
            "run__as_of",
            "instrument__symbol",
            "direction",
            "conviction",
            "entry",
            "stop",
            "target",
            "quantity",
            "status",
        )
    )
    positions = list(
        Position.objects.filter(is_replay=True)
        .order_by("opened_on", "instrument__symbol")
        .values_list("instrument__symbol", "opened_on", "entry_price", "closed_on", "exit_reason", "realised_pnl")
    )
    return theses, positions


def _replay(strategy, start, end, policy="all"):
    return list(replay_strategy(strategy=strategy, start=start, end=end, policy=ApprovalPolicy.parse(policy)))


def test_a_replay_trades_executes_closes_and_reviews_like_live(strategy, instrument_with_bars):
    start, end = _days(instrument_with_bars, 240, 262)

    days = _replay(strategy, start, end)

    assert len(days) == 23
    assert StrategyRun.objects.filter(strategy=strategy, is_replay=True).count() == 23
    theses, positions = _record(strategy)
    assert theses and positions
    assert all(p[1] > start for p in positions)  # next-open fills: never on the decision day itself
    closed = Position.objects.filter(is_replay=True, status="closed")
    assert all(hasattr(p, "review") for p in closed)
    assert not Position.objects.filter(is_replay=False).exists()  # the live book is untouched
    assert {d.decision for d in days} <= {"hold", "rebalance"}


def test_two_replays_with_the_same_inputs_leave_identical_records(strategy, instrument_with_bars):
    start, end = _days(instrument_with_bars, 240, 255)

    _replay(strategy, start, end)
    first = _record(strategy)
    _replay(strategy, start, end)

    assert _record(strategy) == first


def test_changing_data_after_a_replay_day_leaves_that_days_decisions_unchanged(strategy, instrument_with_bars):
    start, end = _days(instrument_with_bars, 240, 256)
    pivot = _days(instrument_with_bars, 248, 248)[0]
    _replay(strategy, start, end)
    before = [t for t in _record(strategy)[0] if t[0] <= pivot]

    for bar in DailyBar.objects.filter(date__gt=pivot):
        bar.open, bar.high, bar.low, bar.close = bar.open / 2, bar.high / 2, bar.low / 2, bar.close / 2
        bar.save()
    _replay(strategy, start, end)

    after = [t for t in _record(strategy)[0] if t[0] <= pivot]
    assert after == before and before


def test_the_approval_policy_is_parsed_strictly():
    assert ApprovalPolicy.parse("conviction >= 0.6").min_conviction == Decimal("0.6")
    assert ApprovalPolicy.parse("none").approve is False
    with pytest.raises(ValueError, match="use all, none or conviction>=X"):
        ApprovalPolicy.parse("conviction>=2")


def test_the_command_shows_progress_and_a_summary(strategy, instrument_with_bars, capsys):
    start, end = _days(instrument_with_bars, 250, 254)

    call_command("replay", "--strategy", "swing", "--from", str(start), "--to", str(end), "--approve", "all")

    captured = capsys.readouterr()
    assert "Replayed swing over 5 session(s)" in captured.out
    assert "5/5" in captured.err  # the progress bar


@pytest.mark.django_db(transaction=True)  # worker processes read what the command committed
def test_the_command_runs_a_days_pipeline_runs_in_worker_processes(strategy, instrument_with_bars, capsys):
    start, end = _days(instrument_with_bars, 250, 254)
    _replay(strategy, start, end)
    sequential = _record(strategy)

    call_command("replay", "--strategy", "swing", "--from", str(start), "--to", str(end), "--workers", "2")

    assert "Replayed swing over 5 session(s)" in capsys.readouterr().out
    assert _record(strategy) == sequential


def test_the_command_names_the_problem(strategy):
    with pytest.raises(CommandError, match="--workers needs the fast path"):
        call_command(
            "replay", "--strategy", "swing", "--from", "2024-01-01", "--to", "2024-02-01", "--plain", "--workers", "2"
        )
    with pytest.raises(CommandError, match="no strategy named 'nope'; strategies: swing"):
        call_command("replay", "--strategy", "nope", "--from", "2024-01-01", "--to", "2024-02-01")
    with pytest.raises(CommandError, match="is after"):
        call_command("replay", "--strategy", "swing", "--from", "2024-02-01", "--to", "2024-01-01")


def test_the_portfolio_page_reads_a_replays_book(client, viewer, strategy, instrument_with_bars):
    from django.urls import reverse

    from trading.book.accounts import replay_account

    start, end = _days(instrument_with_bars, 240, 262)
    _replay(strategy, start, end)
    account = replay_account(strategy.name)
    client.force_login(viewer)

    body = client.get(reverse("portfolio"), {"account": account.pk}).content.decode()

    assert "replay: swing" in body
    assert "No closed positions yet." not in body


def test_a_strategy_mandate_and_its_risk_limits_reach_the_run(strategy, instrument_with_bars):
    Strategy.objects.filter(pk=strategy.pk).update(max_positions=0)
    start, end = _days(instrument_with_bars, 250, 250)

    _replay(strategy, start, end)

    thesis = Thesis.objects.filter(run__strategy_run__strategy=strategy).first()
    checks = {c["name"]: c["passed"] for c in thesis.risk_checks}
    assert checks["max_positions"] is False and not thesis.risk_approved
    context = run_outputs(thesis.run).context
    assert context.memory_block.startswith("Strategy mandate (swing): Trend swings")
