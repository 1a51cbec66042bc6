"""A replay approving everything ends with every limit held: the book as a whole, day after day."""

from __future__ import annotations

from decimal import Decimal

from django.core.management import call_command

from tests.conftest import make_bars
from trading.book.accounts import default_account, replay_account
from trading.management.commands.book_report import book_figures
from trading.models import Account, Instrument, Strategy
from trading.strategies.replay import ApprovalPolicy, replay_strategy

SYMBOLS = [("INFY", 11, 1500.0), ("TCS", 12, 3500.0), ("SBIN", 13, 600.0), ("LT", 14, 2400.0), ("ITC", 15, 400.0)]


def test_a_replay_approving_everything_never_breaches_a_limit_or_overdraws(db, settings):
    settings.BROKER = {**settings.BROKER, "FILL_POLICY": "next_open"}
    universe = []
    for symbol, seed, first_close in SYMBOLS:
        instrument = Instrument.objects.create(symbol=symbol, exchange="NSE", name=symbol)
        make_bars(instrument, 280, seed=seed, first_close=first_close)
        universe.append(instrument)
    live = default_account()
    # Tight on purpose: five instruments compete for two slots and 40% of capital, shorts allowed
    # so both sides of every debate reach the book.
    Account.objects.filter(pk=live.pk).update(
        max_positions=2, exposure_cap_pct=Decimal("40"), max_notional_pct=Decimal("25"), allow_short=True
    )
    strategy = Strategy.objects.create(name="tight", philosophy="Swing trades, 2R targets.")
    strategy.universe.set(universe)
    dates = list(universe[0].bars.order_by("date").values_list("date", flat=True))

    days = list(replay_strategy(strategy=strategy, start=dates[250], end=dates[-1], policy=ApprovalPolicy.parse("all")))

    figures = book_figures(replay_account(strategy.name))
    assert sum(day.approved for day in days) > 2, "the replay must have tried to fill the book"
    assert figures["max_open_positions"][0] <= 2
    assert figures["max_gross_exposure_pct"][0] <= Decimal("40") + Decimal("5")  # marks move after entry
    assert figures["min_cash"][0] >= 0
    assert figures["days_with_two_ideas_in_one_instrument"] == []
    refusals = [reason for day in days for reason in day.refused]
    assert any("max_positions" in reason or "exposure_cap" in reason for reason in refusals), refusals[:3]


def test_the_book_report_names_an_unknown_account_and_prints_the_figures(db, capsys):
    import pytest
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no account named 'nope'"):
        call_command("book_report", account="nope")
    call_command("book_report", account=default_account().name)
    assert "most open at once 0" in capsys.readouterr().out
