"""The hard part of a non-trivial book, pinned figure by figure: the review's arithmetic may get
faster but never different. The book has target, stop, horizon and manual exits on both sides,
costs, a dividend, rows written before the broker kept its reference prices, an open position,
analyst notes, debates, forecast bands, a research signal, heuristic citations and model calls;
it is reviewed over the whole period, over its second half (positions enter it at their marks),
for one position, and under a cost model changed since the trades.

The expected reports are ``retrospective_pinned.json`` beside this file, with each position's id
replaced by its name in the book. After a change that is meant to move a figure, rewrite it with
``REVIEWS_PIN_WRITE=1 .venv/bin/pytest tests/reviews/test_retrospective_pinned.py`` and read the
diff before committing it."""

from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agents.models import Heuristic, ModelCall
from reviews.retrospective import build_hard_part
from tests.factories import DEFAULT_START, AccountFactory, InstrumentFactory, next_session, position_on_path, trending
from tests.factories.market import flat, gapped, wandering
from trading.models import (
    AnalystNoteRecord,
    DebateRecord,
    FeatureSnapshot,
    HeuristicCitation,
    Order,
    PipelineRun,
    Position,
    StageRun,
)

pytestmark = pytest.mark.django_db

D = Decimal
PINNED = Path(__file__).with_name("retrospective_pinned.json")
END = DEFAULT_START + dt.timedelta(days=120)
SECOND_HALF = next_session(DEFAULT_START, 8)
GAVE_BACK = ["100", "100", "102", "105", "107", "108", "106", "104", "102", "101.5"]


def book(account: Any) -> dict[str, Position]:
    """The positions by name; every instrument named here, so the reports do not depend on the
    factories' sequences."""

    def on(symbol: str, path: Any, **kwargs: Any) -> Position:
        instrument = InstrumentFactory(symbol=symbol)
        return position_on_path(path, account=account, instrument=instrument, **kwargs)

    positions = {
        "winner": on("PINWIN", trending(100, 30, "1")),
        "loser": on("PINLOSE", trending(100, 30, "-1"), quantity=37),
        "by_hand": on("PINHAND", GAVE_BACK, horizon_sessions=20, close_by_hand="gave back"),
        "short_winner": on("PINSHORT", trending(250, 20, "-1.5"), direction="SHORT", quantity=12),
        "short_gapped": on(
            "PINGAP", gapped(80, before=4, gap_pct=8, after=4), direction="SHORT", quantity=55, start=SECOND_HALF
        ),
        "timed_out": on("PINTIME", wandering(150, 12, seed=3), horizon_sessions=5, quantity=21),
        "old_rows": on("PINOLD", trending(120, 15, "0.8"), horizon_sessions=8, quantity=40),
        "dividend": on("PINDIV", flat(300, 10), horizon_sessions=6, quantity=15),
        "open": on("PINOPEN", ["100", "101", "102", "101.5", "103"], quantity=60, start=SECOND_HALF),
    }
    # Written before the broker kept its references and the order's cost lines: rebuilt from the bars.
    old = positions["old_rows"]
    Order.objects.filter(pk=old.order_id).update(reference_price=None, costs={})
    Position.objects.filter(pk=old.pk).update(exit_reference=None)
    # A dividend received while held, as the book credits it: part of the realised result.
    paid = positions["dividend"]
    Position.objects.filter(pk=paid.pk).update(dividends=D("45.00"), realised_pnl=paid.realised_pnl + D("45.00"))
    return {name: Position.objects.get(pk=position.pk) for name, position in positions.items()}


def evidence(positions: dict[str, Position]) -> None:
    """What the runs behind the positions said and cost, and the heuristics they cited."""
    for code, status in (("H-1", "active"), ("H-2", "active"), ("H-3", "active"), ("H-7", "demoted")):
        Heuristic.objects.create(code=code, text=f"rule {code}", status=status)
    stances = ("0.6", "-0.4", "0.2", "0", "-0.8", "0.9", "-0.1", "0.3", "0.5")
    for number, (name, position) in enumerate(positions.items()):
        run = position.thesis.run
        for offset, role in enumerate(("technical", "news", "sentiment", "fundamental")):
            AnalystNoteRecord.objects.create(
                run=run,
                role=role,
                stance=D(stances[(number + offset) % len(stances)]),
                confidence=D("0.7"),
                abstained=role == "sentiment" and number % 3 == 0,
                summary="a note",
            )
        DebateRecord.objects.create(
            run=run, winner="LONG" if number % 2 else "SHORT", proposed_conviction=D("0.7"), conviction=D("0.6"),
            opposing=1, side_taking=3, opposing_share=D("0.3333"), rationale="the case",
        )  # fmt: skip
        close = float(position.entry_price)
        snapshot = FeatureSnapshot.objects.create(
            instrument=run.instrument,
            as_of=run.as_of,
            bundle={"forecast": {"low_price": close * 0.97, "high_price": close * 1.03, "horizon_sessions": 3}},
            digest=f"pinned-{name}",
        )
        PipelineRun.objects.filter(pk=run.pk).update(feature_snapshot=snapshot)
        ModelCall.objects.create(
            run=run, role="trader", symbol=name, tier="default", provider="p", model="m", prompt_key="k",
            system="", prompt="", cost=D("0.012345") * (number + 1), ok=True,
        )  # fmt: skip
        for code, accepted in (("H-1", True), (("H-2", "H-7", "H-9")[number % 3], number % 4 != 1)):
            HeuristicCitation.objects.create(
                run=run, role="trader", code=code, heuristic=Heuristic.objects.filter(code=code).first(),
                accepted=accepted, cited_on=run.as_of,
            )  # fmt: skip
        signal = {"name": "sma_crossover(fast=10, slow=50)", "reading": {"position": 1 if number % 2 else -1}}
        StageRun.objects.create(
            run=run, stage="context", position=1, status=StageRun.Status.DONE, output={"research_signals": [signal]}
        )


def named(value: Any, names: dict[int, str], key: str = "") -> Any:
    """``value`` with every position id (under ``id`` or ``position_id``) replaced by its name."""
    if isinstance(value, dict):
        return {k: named(v, names, k) for k, v in value.items()}
    if isinstance(value, list):
        return [named(item, names) for item in value]
    if key in ("id", "position_id") and isinstance(value, int):
        return names[value]
    return value


def reports(settings: Any) -> dict[str, Any]:
    account = AccountFactory(roomy=True)
    positions = book(account)
    evidence(positions)
    names = {position.pk: name for name, position in positions.items()}
    by_hand = positions["by_hand"]
    assert by_hand.closed_on is not None
    found = {
        "whole": build_hard_part(account=account, start=DEFAULT_START, end=END),
        "second_half": build_hard_part(account=account, start=SECOND_HALF, end=END),
        "by_hand": build_hard_part(account=account, start=by_hand.opened_on, end=by_hand.closed_on, position=by_hand),
    }
    settings.BROKER = {**settings.BROKER, "COSTS": {"brokerage_flat": "20"}}
    found["costs_changed_since"] = build_hard_part(account=account, start=DEFAULT_START, end=END)
    return named(found, names)


def test_the_hard_part_of_a_mixed_book_is_the_pinned_one(settings) -> None:
    settings.RETROSPECTIVE = {**settings.RETROSPECTIVE, "INFERENCE_RATE": "83.5"}  # ₹ a dollar
    found = reports(settings)
    whole = found["whole"]
    # The book is the one meant: each kind of exit, a rebuilt reference, an open position, a dividend.
    assert whole["actions"]["exits_by_reason"] == {"horizon": 3, "manual": 1, "stop": 2, "target": 2}
    assert [row["id"] for row in whole["positions"] if row["closed_on"] is None] == ["open"]
    assert whole["attribution"]["dividends"] == "45.00" and whole["inference_source"]["counted"] is True
    assert found["costs_changed_since"]["attribution"] != whole["attribution"]
    if os.environ.get("REVIEWS_PIN_WRITE"):
        PINNED.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    assert found == json.loads(PINNED.read_text())
