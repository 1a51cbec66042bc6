"""Replay an account's history day by day and print the worst figures it ever reached.

Reads only stored rows (fills, marks, closes), so it can audit any account, live or replay:
the most positions open at once (with the working orders that sat beside them), the highest
gross exposure as a share of capital, the lowest cash, and any day with two live ideas in one
instrument.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from decimal import Decimal

from django.core.management.base import BaseCommand, CommandError

from trading.models import Account, Order, Position, PositionMark

HUNDRED = Decimal(100)


def _cash_flows(account: Account) -> dict[dt.date, Decimal]:
    """Cash out at each fill, back at each close (as the broker books them), by day."""
    flows: dict[dt.date, Decimal] = defaultdict(Decimal)
    for position in Position.objects.filter(account=account).select_related("order"):
        flows[position.opened_on] -= position.entry_price * position.quantity + position.entry_costs
        if position.closed_on is not None and position.exit_price is not None:
            sign = 1 if position.direction == "LONG" else -1
            gross = sign * (position.exit_price - position.entry_price) * position.quantity
            flows[position.closed_on] += position.entry_price * position.quantity + gross - position.exit_costs
    return flows


def book_figures(account: Account) -> dict[str, object]:
    positions = list(Position.objects.filter(account=account))
    orders = list(Order.objects.filter(account=account).select_related("thesis"))
    marks: dict[tuple[int, dt.date], Decimal] = {
        (mark.position_id, mark.date): mark.close for mark in PositionMark.objects.filter(position__in=positions)
    }
    days = sorted(
        {p.opened_on for p in positions}
        | {p.closed_on for p in positions if p.closed_on}
        | {o.placed_on for o in orders}
        | {date for _, date in marks}
    )
    flows = _cash_flows(account)
    cash = account.capital
    last_close: dict[int, Decimal] = {}
    worst = {"positions": (0, None), "exposure_pct": (Decimal(0), None), "cash": (account.capital, None)}
    duplicate_days: list[str] = []
    for day in days:
        cash += flows.get(day, Decimal(0))
        open_now = [p for p in positions if p.opened_on <= day and (p.closed_on is None or p.closed_on > day)]
        working = [
            o
            for o in orders
            if o.placed_on <= day and (o.filled_on is None or o.filled_on > day) and o.status != "cancelled"
        ]
        exposure = Decimal(0)
        for position in open_now:
            price = marks.get((position.pk, day)) or last_close.get(position.pk) or position.entry_price
            last_close[position.pk] = price
            exposure += price * position.quantity
        exposure_pct = exposure / account.capital * HUNDRED
        symbols = [p.instrument_id for p in open_now] + [o.instrument_id for o in working]
        if len(symbols) != len(set(symbols)):
            duplicate_days.append(day.isoformat())
        if len(open_now) > worst["positions"][0]:
            worst["positions"] = (len(open_now), day)
        if exposure_pct > worst["exposure_pct"][0]:
            worst["exposure_pct"] = (exposure_pct, day)
        if cash < worst["cash"][0]:
            worst["cash"] = (cash, day)
    return {
        "account": account.name,
        "capital": account.capital,
        "positions": len(positions),
        "closed": sum(1 for p in positions if p.status == "closed"),
        "max_open_positions": worst["positions"],
        "max_gross_exposure_pct": (worst["exposure_pct"][0].quantize(Decimal("0.1")), worst["exposure_pct"][1]),
        "min_cash": (worst["cash"][0].quantize(Decimal("0.01")), worst["cash"][1]),
        "days_with_two_ideas_in_one_instrument": duplicate_days,
        "limits": {
            "max_positions": account.max_positions,
            "exposure_cap_pct": account.exposure_cap_pct,
        },
    }


class Command(BaseCommand):
    help = "Print the worst book figures an account ever reached (positions, exposure %, cash)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--account", required=True, help="the account's name, e.g. 'replay: Large-cap swing'")

    def handle(self, *args, account: str, **options) -> None:
        row = Account.objects.filter(name=account).first()
        if row is None:
            names = ", ".join(Account.objects.values_list("name", flat=True)) or "none"
            raise CommandError(f"no account named {account!r} (accounts: {names})")
        figures = book_figures(row)
        limits = figures["limits"]
        count, count_day = figures["max_open_positions"]
        exposure, exposure_day = figures["max_gross_exposure_pct"]
        cash, cash_day = figures["min_cash"]
        duplicates = figures["days_with_two_ideas_in_one_instrument"]
        self.stdout.write(f"account {figures['account']}: capital {figures['capital']}")
        self.stdout.write(f"positions {figures['positions']} ({figures['closed']} closed)")
        self.stdout.write(f"most open at once {count} on {count_day} (limit {limits['max_positions']})")
        self.stdout.write(f"highest gross exposure {exposure}% on {exposure_day} (cap {limits['exposure_cap_pct']}%)")
        self.stdout.write(f"lowest cash {cash} on {cash_day}")
        self.stdout.write(f"days with two live ideas in one instrument: {len(duplicates)}")
