"""The performance page shows, for every account (replay books included), the figures the pure
``reviews.domain.performance`` computes from the same stored rows: rows built here by hand, the
expected figures computed here from those rows, the page read back cell by cell."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import defaultdict
from decimal import Decimal

import pytest
from django.urls import reverse

from reviews.domain.performance import (
    BenchmarkPoint,
    EquityPoint,
    TradeResult,
    against_benchmark,
    performance,
)
from reviews.performance import BENCHMARK_CODE, benchmark_on_equity_dates
from tests.factories import AccountFactory, flat, position_on_path, sessions, trending
from tests.factories.market import DEFAULT_START
from trading.book.accounts import replay_account
from trading.models import Account, MacroIndicator, Position, PositionMark
from vocabulary.money import format_money
from vocabulary.numbers import format_percent, format_signed_percent

pytestmark = pytest.mark.django_db
URL = "/reviews/performance/"


def _book(account: Account) -> dict[str, Position]:
    """A known win (up 1% a session: the 2R target), then a known loss (down 1%: the stop) opened
    after the win has closed, so the equity falls from a peak, and a position still open at its
    marks (up 0.2% a session)."""
    return {
        "win": position_on_path(trending(100, 30, "1"), account=account),
        "loss": position_on_path(trending(100, 30, "-1"), account=account, start=sessions(DEFAULT_START, 16)[-1]),
        "open": position_on_path(trending(200, 20, "0.2"), account=account, quantity=50),
    }


def _nifty(days: list[dt.date], first: Decimal = Decimal("22000")) -> None:
    """A Nifty close on every given day, drifting up 0.1% a day."""
    MacroIndicator.objects.bulk_create(
        MacroIndicator(code=BENCHMARK_CODE, name="Nifty 50", unit="index points", date=day, value=level)
        for day, level in zip(
            days, [(first * Decimal("1.001") ** i).quantize(Decimal("0.01")) for i in range(len(days))], strict=True
        )
    )


def _expected(account: Account):
    """The pure module's figures from the rows, with the equity summed here in Decimal: capital,
    realised PnL closed by the day, and the day's marks."""
    positions = list(Position.objects.filter(account=account))
    realised_by_day: dict[dt.date, Decimal] = defaultdict(Decimal)
    for position in positions:
        if position.status == Position.Status.CLOSED:
            assert position.closed_on is not None and position.realised_pnl is not None
            realised_by_day[position.closed_on] += position.realised_pnl
    marks_by_day: dict[dt.date, Decimal] = defaultdict(Decimal)
    for mark in PositionMark.objects.filter(position__account=account):
        marks_by_day[mark.date] += mark.unrealised_pnl
    equity, cumulative = [], Decimal(0)
    for day in sorted(set(realised_by_day) | set(marks_by_day)):
        cumulative += realised_by_day.get(day, Decimal(0))
        equity.append(EquityPoint(day, account.capital + cumulative + marks_by_day.get(day, Decimal(0))))
    trades = [
        TradeResult(p.realised_pnl, p.entry_price, p.stop, p.quantity)
        for p in positions
        if p.status == Position.Status.CLOSED and p.realised_pnl is not None
    ]
    unrealised = [p.unrealised_pnl for p in positions if p.status == Position.Status.OPEN]
    return equity, performance(equity, trades, open_unrealised=unrealised)


def _cells(body: str, account: Account) -> dict[str, str]:
    row = re.search(rf'<tr id="account-{account.pk}">(.*?)</tr>', body, re.DOTALL)
    assert row, f"no row for {account.name}"
    return {
        name: value.strip()
        for name, value in re.findall(r'data-figure="(\w+)">(.*?)</(?:td|span)>', row.group(1), re.DOTALL)
    }


def test_the_page_shows_the_pure_modules_figures_for_a_book_with_a_win_a_loss_and_marks(client, viewer) -> None:
    account = AccountFactory(roomy=True)
    book = _book(account)
    assert book["win"].realised_pnl is not None and book["win"].realised_pnl > 0
    assert book["loss"].realised_pnl is not None and book["loss"].realised_pnl < 0
    assert book["open"].status == Position.Status.OPEN and book["open"].unrealised_pnl > 0
    _nifty(sessions(DEFAULT_START, 50))
    equity, figures = _expected(account)
    levels = [BenchmarkPoint(m.date, m.value) for m in MacroIndicator.objects.order_by("date")]
    comparison = against_benchmark(equity, [level for level in levels if level.date in {p.date for p in equity}])
    assert comparison is not None and figures.sharpe is not None and figures.sortino is not None
    assert figures.max_drawdown.amount > 0

    client.force_login(viewer)
    response = client.get(URL, {"account": account.pk})

    assert response.status_code == 200
    cells = _cells(response.content.decode(), account)
    assert cells["realised"] == format_money(figures.realised, "INR")
    assert cells["unrealised"] == format_money(figures.unrealised, "INR")
    assert cells["trades"] == "2 (1 / 1)"
    assert cells["win_rate"] == format_percent(figures.win_rate_pct) == "50.00%"
    assert cells["profit_factor"] == str(figures.profit_factor)
    assert cells["average_r"] == f"{figures.average_r}R"
    assert cells["max_drawdown"] == format_money(figures.max_drawdown.amount, "INR")
    assert cells["max_drawdown_pct"] == format_percent(figures.max_drawdown.pct)
    # Returns are moves: signed, as every move on the desk.
    assert cells["return"] == format_signed_percent(figures.total_return_pct)
    assert cells["sharpe"] == str(figures.sharpe)
    assert cells["sortino"] == str(figures.sortino)
    assert cells["benchmark_return"] == format_signed_percent(comparison.benchmark_return_pct)
    assert cells["excess_return"] == format_signed_percent(comparison.excess_return_pct)
    assert "replay" not in cells
    # The chart: the equity and the Nifty rebased to it, day by day, as drawn.
    chart = response.context["chart"]
    equity_trace, nifty_trace = chart["data"]
    assert equity_trace["y"] == [float(point.equity) for point in equity]
    assert nifty_trace["y"] == [float(row.benchmark) for row in comparison.rows]
    assert nifty_trace["y"][0] == equity_trace["y"][0]  # rebased to the same start
    assert chart["layout"]["xaxis"]["type"] == "date" and chart["layout"]["yaxis"]["tickprefix"] == "₹"
    assert json.loads(re.search(r'id="chart-data"[^>]*>(.*?)</script>', response.content.decode(), re.DOTALL).group(1))


def test_an_account_without_trades_says_so_instead_of_failing(client, viewer) -> None:
    quiet = AccountFactory(name="quiet book")
    held = AccountFactory(name="held only", roomy=True)
    position_on_path(flat(150, 6), account=held)  # open, marked, never closed
    client.force_login(viewer)

    response = client.get(URL)

    assert response.status_code == 200
    body = response.content.decode()
    assert _cells(body, quiet) == {
        "realised": format_money(Decimal(0), "INR"),
        "unrealised": format_money(Decimal(0), "INR"),
        "no_trades": "no closed trades",
        "no_equity": "no marked equity yet",
    }
    held_cells = _cells(body, held)
    assert held_cells["no_trades"] == "no closed trades"
    assert held_cells["max_drawdown"] == format_money(Decimal(0), "INR")
    assert "no_benchmark" in held_cells  # no Nifty stored: said, not guessed


def test_a_new_desk_shows_its_paper_book_before_anything_traded(client, viewer) -> None:
    assert not Account.objects.exists()
    client.force_login(viewer)

    body = client.get(URL).content.decode()

    paper = Account.objects.get()  # the desk's default book, as the portfolio opens it
    assert _cells(body, paper)["no_trades"] == "no closed trades"
    assert "No accounts yet" not in body


def test_replay_books_are_listed_and_labelled(client, viewer) -> None:
    live = AccountFactory(name="the live book", roomy=True)
    replay = replay_account("momentum")
    position_on_path(trending(100, 30, "1"), account=replay)
    _, figures = _expected(replay)
    client.force_login(viewer)

    body = client.get(URL).content.decode()

    replay_cells = _cells(body, replay)
    assert replay_cells["replay"] == "replay"
    assert replay_cells["realised"] == format_money(figures.realised, "INR")
    assert replay_cells["trades"] == "1 (1 / 0)"
    assert "replay" not in _cells(body, live)


def test_an_unknown_account_is_refused_with_the_reason(client, viewer) -> None:
    AccountFactory(name="only book")
    client.force_login(viewer)
    response = client.get(URL, {"account": "999999"})
    assert response.status_code == 400
    assert "There is no such account" in response.content.decode()


def test_anonymous_is_sent_to_log_in(client) -> None:
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_the_top_navigation_links_to_it(client, viewer) -> None:
    client.force_login(viewer)
    body = client.get(reverse("portfolio")).content.decode()
    assert f'<a href="{URL}">Performance</a>' in body
    assert reverse("performance") == URL


def test_the_weekly_nifty_is_carried_to_each_equity_day_but_not_when_stale() -> None:
    days = [dt.date(2025, 1, 6) + dt.timedelta(days=i) for i in range(5)] + [dt.date(2025, 2, 3)]
    equity = [EquityPoint(day, Decimal("1000")) for day in days]
    weekly = [
        BenchmarkPoint(dt.date(2025, 1, 3), Decimal("22000")),
        BenchmarkPoint(dt.date(2025, 1, 8), Decimal("22100")),
    ]
    carried = benchmark_on_equity_dates(equity, weekly)
    assert [(p.date.day, p.level) for p in carried] == [
        (6, Decimal("22000")),
        (7, Decimal("22000")),
        (8, Decimal("22100")),
        (9, Decimal("22100")),
        (10, Decimal("22100")),
    ]  # 3 February is 26 days after the last close: left out
