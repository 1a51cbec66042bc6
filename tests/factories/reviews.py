"""Retrospective reports as rows, with a realistic hard part, for the review pages and the API.

    from tests.factories.reviews import RetrospectiveReportFactory, hard_part, position_row

    weekly = RetrospectiveReportFactory(horizon="weekly", account=account)
    alarming = RetrospectiveReportFactory(hard=hard_part(calibration_alarm=True))
    flagged = RetrospectiveReportFactory(ungrounded_numbers=True)     # a narrative citing a stray figure
    quiet = RetrospectiveReportFactory(hard=hard_part(quiet=True))    # a period with nothing done
    real = RetrospectiveReportFactory(hard=hard_part(positions=[position_row(p) for p in positions]))

The hard part follows the shared schema (money as strings to the paisa, rates as strings to four
decimals or null). Its attribution is an ``Attribution`` built from the given parts and serialised
with the pure module's own ``waterfall_rows``, so its rows add up to its net as the engine's do.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from reviews.domain.attribution import Attribution, waterfall_rows
from reviews.models import RetrospectiveReport, TradeReview
from tests.factories.book import AccountFactory
from trading.models import Position
from vocabulary.costs import CostBreakdown

PAISA = Decimal("0.01")
RATE = Decimal("0.0001")
# A Friday in the factories' calendar (tests/factories/market.py starts on 2025-01-06).
DEFAULT_END = dt.date(2025, 3, 14)
PERIOD_DAYS = {"daily": 0, "weekly": 6, "epoch": 29, "position": 9, "loss": 0, "testament": 29}
DEFAULT_CHARGES = {
    "brokerage": "80.00",
    "stt": "412.60",
    "exchange_charge": "38.45",
    "sebi_fee": "0.30",
    "stamp_duty": "21.15",
    "gst": "21.33",
}


def money(value: Decimal | str | int) -> str:
    return str(Decimal(value).quantize(PAISA, rounding=ROUND_HALF_UP))


def rate(right: int, calls: int) -> str | None:
    return None if calls == 0 else str((Decimal(right) / Decimal(calls)).quantize(RATE, rounding=ROUND_HALF_UP))


def sessions_between(start: dt.date, end: dt.date) -> int:
    days = (end - start).days + 1
    return sum(1 for offset in range(max(days, 0)) if (start + dt.timedelta(days=offset)).weekday() < 5)


def synthetic_positions() -> list[dict[str, Any]]:
    """Four closed positions and one open, ids far above any a test writes (links, not rows)."""
    rows = [
        (90001, "RELIANCE", "LONG", "2025-03-03", "2025-03-12", "14200.00", "target", "3100.00"),
        (90002, "TCS", "LONG", "2025-03-04", "2025-03-13", "-4210.50", "stop", "5150.00"),
        (90003, "INFY", "SHORT", "2025-03-05", "2025-03-11", "4250.00", "horizon", "610.40"),
        (90004, "HDFCBANK", "LONG", "2025-03-06", "2025-03-10", "1240.00", "manual", "0.00"),
    ]
    positions = [
        {
            "id": pk,
            "symbol": symbol,
            "direction": direction,
            "opened_on": opened,
            "closed_on": closed,
            "realised_pnl": realised,
            "unrealised_pnl": None,
            "exit_reason": reason,
            "vs_inaction": realised,
            "regret": regret,
        }
        for pk, symbol, direction, opened, closed, realised, reason, regret in rows
    ]
    positions.append(
        {
            "id": 90005,
            "symbol": "ITC",
            "direction": "LONG",
            "opened_on": "2025-03-12",
            "closed_on": None,
            "realised_pnl": None,
            "unrealised_pnl": "-830.25",
            "exit_reason": "",
            "vs_inaction": None,
            "regret": None,
        }
    )
    return positions


def position_row(position: Position, *, regret: Decimal | str | None = None) -> dict[str, Any]:
    """A hard part's row for a position the test wrote (so its links lead to a real lifecycle)."""
    closed = position.status == Position.Status.CLOSED
    return {
        "id": position.pk,
        "symbol": position.instrument.symbol,
        "direction": position.direction,
        "opened_on": position.opened_on.isoformat(),
        "closed_on": position.closed_on.isoformat() if position.closed_on else None,
        "realised_pnl": money(position.realised_pnl) if position.realised_pnl is not None else None,
        "unrealised_pnl": None if closed else money(position.unrealised_pnl),
        "exit_reason": position.exit_reason,
        "vs_inaction": money(position.realised_pnl) if closed and position.realised_pnl is not None else None,
        "regret": None if regret is None else money(regret),
    }


def default_heuristics() -> list[dict[str, Any]]:
    return [
        {
            "code": "H-1",
            "citations": 8,
            "total_pnl": "11200.00",
            "win_rate": "0.7500",
            "average_pnl": "1400.00",
            "recommendation": "KEEP",
        },
        {
            "code": "H-3",
            "citations": 3,
            "total_pnl": "-6300.00",
            "win_rate": "0.3333",
            "average_pnl": "-2100.00",
            "recommendation": "DEMOTE",
        },
        {
            "code": "H-12",
            "citations": 5,
            "total_pnl": "1500.00",
            "win_rate": "0.6000",
            "average_pnl": "300.00",
            "recommendation": "INVESTIGATE",
        },
        {
            "code": "H-15",
            "citations": 1,
            "total_pnl": "420.00",
            "win_rate": "1.0000",
            "average_pnl": "420.00",
            "recommendation": "INSUFFICIENT_DATA",
        },
    ]


def calibration(*, alarm: bool = False, threshold: float = 0.25) -> dict[str, Any]:
    analyst, debate = (0.3125, 0.2810) if alarm else (0.0840, 0.1120)
    return {
        "analyst_ece": analyst,
        "debate_ece": debate,
        "samples": 64,
        "alarm": alarm,
        "threshold": threshold,
        "by_subject": {
            "debate": {"ece": debate, "samples": 32, "bins": []},
            "technical": {"ece": analyst, "samples": 32, "bins": []},
        },
    }


def _attribution(parts: Mapping[str, str], charges: Mapping[str, str], max_drawdown: str | None) -> Attribution:
    amounts = {name: Decimal(value) for name, value in parts.items()}
    breakdown = CostBreakdown(**{name: Decimal(value) for name, value in charges.items()})
    net = sum(amounts.values(), start=Decimal("0.00")) - breakdown.total
    risk_adjusted = None
    if max_drawdown is not None and Decimal(max_drawdown) != 0:
        risk_adjusted = (net / Decimal(max_drawdown)).quantize(PAISA, rounding=ROUND_HALF_UP)
    return Attribution(
        gains=amounts["gains"],
        losses=amounts["losses"],
        slippage=amounts["slippage"],
        charges=breakdown,
        manual=amounts["manual"],
        unrealised=amounts["unrealised"],
        inference=amounts["inference"],
        net=net,
        risk_adjusted_return=risk_adjusted,
        strategy_trades=3,
        manual_trades=1,
    )


def _serialised(attribution: Attribution) -> dict[str, Any]:
    """Every amount a signed contribution to the net, as the attribution module defines them."""
    risk_adjusted = attribution.risk_adjusted_return
    return {
        "gains": money(attribution.gains),
        "losses": money(attribution.losses),
        "slippage": money(attribution.slippage),
        "costs": {name: money(-amount) for name, amount in _charge_lines(attribution.charges).items()},
        "costs_total": money(attribution.costs),
        "dividends": money(attribution.dividends),
        "manual": money(attribution.manual),
        "unrealised": money(attribution.unrealised),
        "inference": money(attribution.inference),
        "net": money(attribution.net),
        "operational_cost": money(attribution.operational_cost),
        "risk_adjusted": None if risk_adjusted is None else str(risk_adjusted),
    }


def _charge_lines(charges: CostBreakdown) -> dict[str, Decimal]:
    return {name: Decimal(value) for name, value in charges.to_dict().items() if name != "total"}


def _best_and_worst(positions: Sequence[Mapping[str, Any]]) -> tuple[Any, Any]:
    closed = [row for row in positions if row.get("realised_pnl") is not None]
    if not closed:
        return None, None
    ranked = sorted(closed, key=lambda row: Decimal(row["realised_pnl"]))
    return ranked[-1], ranked[0]


def hard_part(
    *,
    start: dt.date | None = None,
    end: dt.date = DEFAULT_END,
    currency: str = "INR",
    quiet: bool = False,
    gains: str = "18450.00",
    losses: str = "-4210.50",
    slippage: str = "-212.35",
    charges: Mapping[str, str] | None = None,
    manual: str = "1240.00",
    unrealised: str = "-830.25",
    inference: str = "-36.40",
    max_drawdown: str | None = "4100.00",
    positions: Sequence[Mapping[str, Any]] | None = None,
    heuristics: Sequence[Mapping[str, Any]] | None = None,
    actions: Mapping[str, Any] | None = None,
    calibration_alarm: bool = False,
    score: str | None = "0.6400",
) -> dict[str, Any]:
    """A hard part as ``reviews.retrospective.build_hard_part`` writes it. ``quiet=True`` is a period
    in which nothing was done: every amount zero, no positions, no calls, no citations."""
    start = start or end - dt.timedelta(days=6)
    if quiet:
        gains = losses = slippage = manual = unrealised = inference = "0.00"
        charges = dict.fromkeys(DEFAULT_CHARGES, "0.00")
        positions, heuristics, max_drawdown, score = [], [], None, None
        actions = {"entries": 0, "exits": 0, "holds": 0, "rejected": 0, "exits_by_reason": {}}
    parts = {
        "gains": gains,
        "losses": losses,
        "slippage": slippage,
        "manual": manual,
        "unrealised": unrealised,
        "inference": inference,
    }
    attribution = _attribution(parts, charges or DEFAULT_CHARGES, max_drawdown)
    rows = list(synthetic_positions() if positions is None else positions)
    best, worst = _best_and_worst(rows)
    closed = [row for row in rows if row.get("realised_pnl") is not None]
    beaten = sum(1 for row in closed if Decimal(row["realised_pnl"]) < 0)
    superiority = rate(beaten, len(closed))
    analysts = [] if quiet else [("technical", 9, 6), ("news", 7, 4), ("fundamental", 5, 3), ("sentiment", 0, 0)]
    debate = (0, 0) if quiet else (9, 6)
    return {
        "currency": currency,
        "period": {"start": start.isoformat(), "end": end.isoformat(), "sessions": sessions_between(start, end)},
        "attribution": _serialised(attribution),
        "waterfall": [{"label": row.label, "amount": money(row.amount)} for row in waterfall_rows(attribution)],
        "actions": dict(
            actions
            or {
                "entries": 5,
                "exits": 4,
                "holds": 47,
                "rejected": 2,
                "exits_by_reason": {"target": 1, "stop": 1, "horizon": 1, "manual": 1},
            }
        ),
        "positions": rows,
        "best_position": best,
        "worst_position": worst,
        "inaction": {"positions": len(closed), "beaten_by_inaction": beaten, "superiority": superiority},
        "accuracy": {
            "analysts": [
                {"role": role, "calls": calls, "right": right, "rate": rate(right, calls)}
                for role, calls, right in analysts
            ],
            "debate": {"calls": debate[0], "right": debate[1], "rate": rate(debate[1], debate[0])},
            "levels": {
                "theses": 0 if quiet else 4,
                "target_hit": 0 if quiet else 1,
                "stop_hit": 0 if quiet else 1,
                "neither": 0 if quiet else 2,
                "hit_rate": None if quiet else "0.5000",
            },
            "forecast": {
                "resolved": 0 if quiet else 12,
                "inside": 0 if quiet else 10,
                "coverage": None if quiet else "0.8333",
            },
        },
        "heuristics": [dict(row) for row in (default_heuristics() if heuristics is None else heuristics)],
        "calibration": calibration(alarm=calibration_alarm),
        "effectiveness": {
            "net": money(attribution.net),
            "risk_adjusted": None
            if attribution.risk_adjusted_return is None
            else str(attribution.risk_adjusted_return),
            "inaction_superiority": superiority,
            "score": score,
        },
    }


def narrative(*, hard: Mapping[str, Any] | None = None, stray: str | None = None) -> dict[str, Any]:
    """The model's reading of ``hard``, citing only its figures unless ``stray`` (a number the hard
    part does not hold) is slipped into the first "what worked" line."""
    gains = (hard or {}).get("attribution", {}).get("gains", "18450.00")
    worked = f"Trend entries under H-1 carried the period: gains of {gains}."
    if stray is not None:
        worked = f"Trend entries under H-1 carried the period: gains of {stray}."
    return {
        "what_worked": [worked, "Exits at the target were taken without hesitation."],
        "what_failed": [
            "H-3 entries against the sector's trend were stopped out.",
            "One position was held past its thesis.",
        ],
        "hindsight": "Most of the period's regret came from exits taken late on winners.",
        "proposals": [{"text": "Do not enter against a falling sector index.", "factor": "trend", "heuristic": "H-16"}],
        "confidence": 0.45,
    }


class RetrospectiveReportFactory(DjangoModelFactory):
    """A READY review of the live-like factory account ending ``DEFAULT_END``: the period is one day
    for a daily review, a week for a weekly one, thirty days for an epoch. ``ungrounded_numbers=True``
    makes its narrative cite a figure the hard part does not hold, flagged as the engine flags it."""

    class Meta:
        model = RetrospectiveReport

    class Params:
        ungrounded_numbers = factory.Trait(
            narrative=factory.LazyAttribute(lambda o: narrative(hard=o.hard, stray="99999.99")),
            ungrounded=factory.LazyFunction(lambda: [{"number": "99999.99", "where": "what_worked[0]"}]),
        )
        running = factory.Trait(
            status=RetrospectiveReport.Status.RUNNING,
            hard=factory.LazyFunction(dict),
            narrative=factory.LazyFunction(dict),
            finished_at=None,
        )
        failed = factory.Trait(
            status=RetrospectiveReport.Status.FAILED,
            hard=factory.LazyFunction(dict),
            narrative=factory.LazyFunction(dict),
            error="the model's reply failed validation twice",
            finished_at=None,
        )

    horizon = RetrospectiveReport.Horizon.DAILY
    account = factory.SubFactory(AccountFactory)
    trigger_key = factory.Sequence(lambda n: f"factory:{n}")
    period_end = DEFAULT_END
    period_start = factory.LazyAttribute(lambda o: o.period_end - dt.timedelta(days=PERIOD_DAYS.get(o.horizon, 0)))
    status = RetrospectiveReport.Status.READY
    hard = factory.LazyAttribute(
        lambda o: hard_part(start=o.period_start, end=o.period_end, currency=o.account.currency)
    )
    narrative = factory.LazyAttribute(lambda o: narrative(hard=o.hard))
    ungrounded = factory.LazyFunction(list)
    confidence = factory.LazyAttribute(lambda o: Decimal("0.6500") if o.horizon == "epoch" else Decimal("0.4500"))
    model_used = "offline-rules"
    tier = factory.LazyAttribute(lambda o: "deep" if o.horizon in ("epoch", "testament") else "quick")
    attempts = 1
    finished_at = factory.LazyFunction(timezone.now)


class TradeReviewFactory(DjangoModelFactory):
    """The stage-12 review of a closed ``position`` (required), its figures copied from the row."""

    class Meta:
        model = TradeReview

    position: Any = None
    outcome = factory.LazyAttribute(lambda o: "win" if (o.position.realised_pnl or 0) > 0 else "loss")
    realised_pnl = factory.LazyAttribute(lambda o: o.position.realised_pnl)
    signal_evolution = factory.LazyAttribute(lambda o: "Realized" if o.outcome == "win" else "Falsified")
    thesis_vs_outcome = factory.LazyAttribute(lambda o: {"direction": o.position.direction})
    critique = "The entry followed the trend; the exit waited too long after the peak."
    lessons = factory.LazyFunction(lambda: ["Take partial profit once the move reaches 1R."])
    model_used = "offline-rules"
