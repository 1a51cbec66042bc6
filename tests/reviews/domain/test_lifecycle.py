"""The position retrospective: hand-built paths with every figure worked out, then the invariants.

Most cases price orders with FLAT, a flat ₹20 per order and no other charge, so each figure can be
checked in one's head: entry costs ₹20, and a hindsight exit pays ₹20 more. One case uses the
desk's default (NSE delivery) charges, worked out line by line.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.domain.lifecycle import (
    DEFAULT_CHECKPOINTS,
    Checkpoint,
    ClosedPosition,
    HindsightExit,
    HindsightFill,
    Lifecycle,
    hindsight_exit,
    pnl_path,
    position_lifecycle,
    trajectory,
)
from vocabulary.costs import CostModel, order_costs
from vocabulary.exits import realised_pnl
from vocabulary.fills import exit_side
from vocabulary.trade import Direction

NO_CHARGES = {
    "stt_buy_pct": Decimal(0),
    "stt_sell_pct": Decimal(0),
    "exchange_txn_pct": Decimal(0),
    "sebi_fee_pct": Decimal(0),
    "stamp_duty_buy_pct": Decimal(0),
    "gst_pct": Decimal(0),
}
FLAT = CostModel(brokerage_flat=Decimal(20), **NO_CHARGES)
FREE = CostModel(**NO_CHARGES)
D = Decimal


def closed(
    direction: Direction,
    quantity: int,
    *,
    entry: str,
    closes: list[str],
    exit_price: str,
    exit_session: int | None = None,
    entry_costs: str = "20.00",
    exit_costs: str = "20.00",
) -> ClosedPosition:
    """A closed position whose realised PnL is the book's own arithmetic; by default it closed in
    the session after its last mark (closed by code, so that session has no mark)."""
    pnl = realised_pnl(
        direction=direction,
        quantity=quantity,
        entry_price=D(entry),
        exit_price=D(exit_price),
        entry_costs=D(entry_costs),
        exit_costs=D(exit_costs),
    )
    return ClosedPosition(
        direction=direction,
        quantity=quantity,
        entry_price=D(entry),
        entry_costs=D(entry_costs),
        exit_price=D(exit_price),
        exit_costs=D(exit_costs),
        exit_session=len(closes) if exit_session is None else exit_session,
        closes=tuple(D(close) for close in closes),
        realised_pnl=pnl,
    )


def money(*values: str) -> tuple[Decimal, ...]:
    return tuple(D(value) for value in values)


# --- hand-built paths --------------------------------------------------------------------------


def test_a_long_winner_that_gave_back_most_of_its_gain() -> None:
    # 10 shares bought at ₹100.00 (₹20 to enter); marks 101, 104, 108, 106, 103; closed by the
    # horizon in session 5 at ₹105.50 (₹20 to exit): 10 x 5.50 = 55.00 - 40.00 = +15.00.
    position = closed("LONG", 10, entry="100.00", closes=["101", "104", "108", "106", "103"], exit_price="105.50")
    result = position_lifecycle(position, cost_model=FLAT)

    # Each mark: 10 x (close - 100) - 20 entry costs; no exit costs until the exit.
    assert result.path == money("-10.00", "20.00", "60.00", "40.00", "10.00", "15.00")
    assert result.exit_session == 5
    assert result.trajectory == (Checkpoint(1, D("20.00")), Checkpoint(3, D("40.00")))  # 7, 14, 30: past the exit
    assert result.final_pnl == D("15.00")
    assert (result.vs_inaction, result.inaction_better) == (D("15.00"), False)
    assert (result.peak_pnl, result.peak_session) == (D("60.00"), 2)
    assert result.regret == D("45.00")  # 60.00 - 15.00
    assert result.drawdown_from_peak == D("50.00")  # 60.00 down to 10.00 in session 4
    # Selling at session 2's ₹108: 10 x 8 = 80.00 - 20 entry - 20 exit = +40.00.
    assert result.optimal_exit == HindsightExit(
        session=2, mark=D("108"), price=D("108"), exit_costs=D("20.00"), pnl=D("40.00")
    )


def test_a_long_loser_that_was_never_up() -> None:
    # 50 shares at ₹200.00; marks 198, 195, 190; stopped in session 3 at ₹185.00:
    # 50 x -15 = -750.00 - 40.00 = -790.00.
    position = closed("LONG", 50, entry="200.00", closes=["198", "195", "190"], exit_price="185.00")
    result = position_lifecycle(position, cost_model=FLAT)

    assert result.path == money("-120.00", "-270.00", "-520.00", "-790.00")
    assert result.trajectory == (Checkpoint(1, D("-270.00")), Checkpoint(3, D("-790.00")))  # 3 is the exit itself
    assert (result.final_pnl, result.vs_inaction, result.inaction_better) == (D("-790.00"), D("-790.00"), True)
    # Its best moment was the entry session's close, still a loss: the peak can be negative.
    assert (result.peak_pnl, result.peak_session) == (D("-120.00"), 0)
    assert result.regret == D("670.00")
    assert result.drawdown_from_peak == D("670.00")
    # Out at the first close, ₹198: 50 x -2 = -100.00 - 40.00 = -140.00, the least bad exit.
    assert result.optimal_exit == HindsightExit(
        session=0, mark=D("198"), price=D("198"), exit_costs=D("20.00"), pnl=D("-140.00")
    )


def test_a_flat_trade_loses_exactly_its_costs_and_inaction_beats_it() -> None:
    position = closed("LONG", 10, entry="100.00", closes=["100.00", "100.00", "100.00"], exit_price="100.00")
    result = position_lifecycle(position, cost_model=FLAT)

    assert result.path == money("-20.00", "-20.00", "-20.00", "-40.00")
    assert result.trajectory == (Checkpoint(1, D("-20.00")), Checkpoint(3, D("-40.00")))
    assert (result.final_pnl, result.vs_inaction, result.inaction_better) == (D("-40.00"), D("-40.00"), True)
    assert (result.peak_pnl, result.peak_session) == (D("-20.00"), 0)  # first of the equal sessions
    assert (result.regret, result.drawdown_from_peak) == (D("20.00"), D("20.00"))
    # Every mark exits at -40.00; the tie goes to the earliest session.
    assert result.optimal_exit == HindsightExit(
        session=0, mark=D("100.00"), price=D("100.00"), exit_costs=D("20.00"), pnl=D("-40.00")
    )


def test_a_free_flat_trade_ties_with_inaction_and_inaction_is_not_better() -> None:
    position = closed(
        "SHORT", 10, entry="100.00", closes=["100.00", "100.00"], exit_price="100.00", entry_costs="0", exit_costs="0"
    )
    result = position_lifecycle(position, cost_model=FREE)

    assert result.path == money("0.00", "0.00", "0.00")
    assert (result.final_pnl, result.vs_inaction, result.inaction_better) == (D("0.00"), D("0.00"), False)
    assert (result.peak_pnl, result.peak_session, result.regret, result.drawdown_from_peak) == (
        D("0.00"),
        0,
        D("0.00"),
        D("0.00"),
    )
    assert result.optimal_exit is not None
    assert (result.optimal_exit.session, result.optimal_exit.pnl, result.optimal_exit.exit_costs) == (
        0,
        D("0.00"),
        D("0.00"),
    )


def test_a_one_session_trade_that_gapped_through_its_target() -> None:
    # 100 shares at ₹50.00; marked ₹51.00 on the entry day; session 1 opened at ₹52.40 above the
    # target and filled there: 100 x 2.40 = 240.00 - 40.00 = +200.00.
    position = closed("LONG", 100, entry="50.00", closes=["51.00"], exit_price="52.40")
    result = position_lifecycle(position, cost_model=FLAT)

    assert result.path == money("80.00", "200.00")
    assert result.trajectory == (Checkpoint(1, D("200.00")),)
    assert (result.peak_pnl, result.peak_session, result.regret, result.drawdown_from_peak) == (
        D("200.00"),
        1,
        D("0.00"),
        D("0.00"),
    )
    # The only mark, ₹51.00: 100.00 - 40.00 = +60.00. The real exit beat every mark: the hindsight
    # exit looks among the marks only, so here it is below the final PnL.
    assert result.optimal_exit == HindsightExit(
        session=0, mark=D("51.00"), price=D("51.00"), exit_costs=D("20.00"), pnl=D("60.00")
    )


def test_a_trade_closed_by_hand_in_its_entry_session_has_one_session_of_life() -> None:
    # Marked at ₹51.00 and then closed by hand at that close the same day.
    position = closed("LONG", 100, entry="50.00", closes=["51.00"], exit_price="51.00", exit_session=0)
    result = position_lifecycle(position, cost_model=FLAT)

    assert result.path == money("60.00")
    assert result.trajectory == ()  # even the first checkpoint lies past the exit
    assert position_lifecycle(position, checkpoints=(0, 1), cost_model=FLAT).trajectory == (Checkpoint(0, D("60.00")),)
    assert (result.peak_pnl, result.peak_session, result.regret) == (D("60.00"), 0, D("0.00"))
    assert result.optimal_exit is not None
    assert result.optimal_exit.pnl == result.final_pnl == D("60.00")


def test_a_short_stopped_out_by_a_gap() -> None:
    # 20 shares sold at ₹500.00, stop ₹520; marks 505, 512; session 2 opened at ₹540, through the
    # stop, and filled there: 20 x -40 = -800.00 - 40.00 = -840.00.
    position = closed("SHORT", 20, entry="500.00", closes=["505", "512"], exit_price="540.00")
    result = position_lifecycle(position, cost_model=FLAT)

    assert result.path == money("-120.00", "-260.00", "-840.00")
    assert result.trajectory == (Checkpoint(1, D("-260.00")),)
    assert (result.final_pnl, result.inaction_better) == (D("-840.00"), True)
    assert (result.peak_pnl, result.peak_session) == (D("-120.00"), 0)
    assert (result.regret, result.drawdown_from_peak) == (D("720.00"), D("720.00"))
    # Buying back at ₹505: 20 x -5 = -100.00 - 40.00 = -140.00.
    assert result.optimal_exit == HindsightExit(
        session=0, mark=D("505"), price=D("505"), exit_costs=D("20.00"), pnl=D("-140.00")
    )


def test_a_short_that_was_well_up_and_gave_it_all_back() -> None:
    # 10 shares sold at ₹100.00; marks 97, 92, 95, 99; horizon exit in session 4 at ₹98.00:
    # 10 x 2 = 20.00 - 40.00 = -20.00.
    position = closed("SHORT", 10, entry="100.00", closes=["97", "92", "95", "99"], exit_price="98.00")
    result = position_lifecycle(position, cost_model=FLAT)

    assert result.path == money("10.00", "60.00", "30.00", "-10.00", "-20.00")
    assert result.trajectory == (Checkpoint(1, D("60.00")), Checkpoint(3, D("-10.00")))
    assert (result.final_pnl, result.vs_inaction, result.inaction_better) == (D("-20.00"), D("-20.00"), True)
    assert (result.peak_pnl, result.peak_session) == (D("60.00"), 1)
    assert (result.regret, result.drawdown_from_peak) == (D("80.00"), D("80.00"))
    # Buying back at session 1's ₹92: 10 x 8 = 80.00 - 40.00 = +40.00.
    assert result.optimal_exit == HindsightExit(
        session=1, mark=D("92"), price=D("92"), exit_costs=D("20.00"), pnl=D("40.00")
    )


def test_the_drawdown_from_the_peak_counts_the_lowest_point_after_it_not_only_the_exit() -> None:
    # The LONG winner above: the path fell to 10.00 after its 60.00 peak and recovered to 15.00.
    position = closed("LONG", 10, entry="100.00", closes=["101", "104", "108", "106", "103"], exit_price="105.50")
    result = position_lifecycle(position, cost_model=FLAT)
    assert result.drawdown_from_peak > result.regret


def test_the_default_nse_charges_price_the_hindsight_exit() -> None:
    # 10 shares bought at ₹100.00. Entry (BUY, turnover 1,000.00): STT 1.00, exchange 0.0297 → 0.03,
    # SEBI 0.001 → 0.00, stamp 0.15, GST 18% of 0.03 = 0.0054 → 0.01: ₹1.19.
    # Exit in session 1 at ₹104.00 (SELL, turnover 1,040.00): STT 1.04, exchange 0.030888 → 0.03,
    # SEBI 0.00, no stamp, GST 0.01: ₹1.08. Realised: 40.00 - 1.19 - 1.08 = +37.73.
    assert order_costs("BUY", 10, D("100.00"), CostModel()).total == D("1.19")
    assert order_costs("SELL", 10, D("104.00"), CostModel()).total == D("1.08")
    position = closed(
        "LONG", 10, entry="100.00", closes=["110.00"], exit_price="104.00", entry_costs="1.19", exit_costs="1.08"
    )
    result = position_lifecycle(position)

    assert result.path == money("98.81", "37.73")  # 100.00 - 1.19 at the mark; the exit
    # Hindsight SELL at ₹110.00 (turnover 1,100.00): STT 1.10, exchange 0.03267 → 0.03, SEBI
    # 0.0011 → 0.00, GST 0.0054 → 0.01: ₹1.14. PnL: 100.00 - 1.19 - 1.14 = +97.67.
    assert result.optimal_exit == HindsightExit(
        session=0, mark=D("110.00"), price=D("110.00"), exit_costs=D("1.14"), pnl=D("97.67")
    )
    assert (result.peak_pnl, result.regret) == (D("98.81"), D("61.08"))


def test_a_hindsight_exit_can_pay_the_desks_slippage_like_a_real_exit() -> None:
    position = closed("LONG", 10, entry="100.00", closes=["101", "104", "108", "106", "103"], exit_price="105.50")
    fill = HindsightFill(slippage_bps=D(10), tick=D("0.05"))
    # Selling at ₹108 with 10 bps against: 107.892, down to the tick: ₹107.85.
    # 10 x 7.85 = 78.50 - 40.00 = +38.50.
    assert hindsight_exit(position, cost_model=FLAT, fill=fill) == HindsightExit(
        session=2, mark=D("108"), price=D("107.85"), exit_costs=D("20.00"), pnl=D("38.50")
    )
    short = closed("SHORT", 10, entry="100.00", closes=["97", "92", "95", "99"], exit_price="98.00")
    # Buying back at ₹92 with 10 bps against: 92.092, up to the tick: ₹92.10. 10 x 7.90 = 79.00 - 40.00.
    assert hindsight_exit(short, cost_model=FLAT, fill=fill) == HindsightExit(
        session=1, mark=D("92"), price=D("92.10"), exit_costs=D("20.00"), pnl=D("39.00")
    )


def test_a_mark_in_the_exit_session_is_a_hindsight_candidate_but_the_exit_ends_the_path() -> None:
    # Closed by hand in session 2 after that session's mark (₹110) was written, at ₹104.
    position = closed("LONG", 10, entry="100.00", closes=["101", "102", "110"], exit_price="104.00", exit_session=2)
    result = position_lifecycle(position, cost_model=FLAT)
    assert result.path == money("-10.00", "0.00", "0.00")  # the exit's 40.00 - 40.00, not the mark
    assert result.optimal_exit is not None
    assert (result.optimal_exit.session, result.optimal_exit.pnl) == (2, D("60.00"))


def test_a_position_without_marks_has_no_hindsight_exit() -> None:
    position = closed("LONG", 10, entry="100.00", closes=[], exit_price="101.00", exit_session=0)
    result = position_lifecycle(position, cost_model=FLAT)
    assert result.path == money("-30.00")
    assert result.optimal_exit is None
    assert result.to_dict()["optimal_exit"] is None


# --- checkpoints -------------------------------------------------------------------------------


def test_checkpoints_are_configurable_sorted_once_each_and_never_extrapolated() -> None:
    path = money("-10.00", "20.00", "60.00", "40.00", "10.00", "15.00")
    assert trajectory(path, (5, 2, 2, 6, 0)) == (
        Checkpoint(0, D("-10.00")),
        Checkpoint(2, D("60.00")),
        Checkpoint(5, D("15.00")),
    )
    assert trajectory(path, ()) == ()
    assert DEFAULT_CHECKPOINTS == (1, 3, 7, 14, 30)


def test_a_thirty_session_life_reaches_every_default_checkpoint() -> None:
    closes = [str(100 + session) for session in range(30)]  # session s marked at 100 + s
    position = closed("LONG", 1, entry="100.00", closes=closes, exit_price="130.00", entry_costs="0", exit_costs="0")
    result = position_lifecycle(position, cost_model=FREE)
    assert result.trajectory == tuple(Checkpoint(s, D(s).quantize(D("0.01"))) for s in (1, 3, 7, 14, 30))


@pytest.mark.parametrize("checkpoint", [-1, True, 1.5, "3"])
def test_a_checkpoint_must_be_a_whole_number_of_sessions(checkpoint: object) -> None:
    with pytest.raises(ValueError, match="checkpoint"):
        trajectory(money("1.00", "2.00"), (1, checkpoint))  # type: ignore[arg-type]


# --- what is refused ---------------------------------------------------------------------------


def test_a_realised_pnl_that_does_not_match_the_prices_and_costs_is_refused() -> None:
    good = closed("LONG", 10, entry="100.00", closes=["101"], exit_price="102.00")
    with pytest.raises(ValueError, match="does not match"):
        ClosedPosition(**{**vars(good), "realised_pnl": D("0.01")})


@pytest.mark.parametrize(
    ("marks", "exit_session"),
    [(["101", "102"], 0), (["101"], 2), ([], 1), (["101", "102", "103"], 1)],
)
def test_the_marks_must_cover_the_sessions_before_the_exit(marks: list[str], exit_session: int) -> None:
    with pytest.raises(ValueError, match="marks"):
        closed("LONG", 10, entry="100.00", closes=marks, exit_price="102.00", exit_session=exit_session)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("direction", "FLAT", "LONG or SHORT"),
        ("quantity", 0, "quantity"),
        ("quantity", True, "quantity"),
        ("entry_price", D(0), "entry_price"),
        ("exit_price", 102.0, "exit_price"),
        ("closes", (D("101"), D("-1")), "closes"),
        ("closes", (D("NaN"),), "closes"),
        ("entry_costs", D("-0.01"), "entry_costs"),
        ("exit_costs", D("Infinity"), "exit_costs"),
        ("exit_session", -1, "exit_session"),
    ],
)
def test_a_malformed_position_is_refused(field: str, value: object, message: str) -> None:
    good = closed("LONG", 10, entry="100.00", closes=["101"], exit_price="102.00")
    with pytest.raises(ValueError, match=message):
        ClosedPosition(**{**vars(good), field: value})


def test_closes_given_as_a_list_are_frozen_into_a_tuple() -> None:
    good = closed("LONG", 10, entry="100.00", closes=["101"], exit_price="102.00")
    position = ClosedPosition(**{**vars(good), "closes": [D("101")]})
    assert position.closes == (D("101"),)


def test_the_retrospective_reads_as_json() -> None:
    position = closed("LONG", 100, entry="50.00", closes=["51.00"], exit_price="52.40")
    assert position_lifecycle(position, cost_model=FLAT).to_dict() == {
        "exit_session": 1,
        "path": ["80.00", "200.00"],
        "trajectory": [{"session": 1, "pnl": "200.00"}],
        "final_pnl": "200.00",
        "vs_inaction": "200.00",
        "inaction_better": False,
        "peak_pnl": "200.00",
        "peak_session": 1,
        "regret": "0.00",
        "drawdown_from_peak": "0.00",
        "optimal_exit": {"session": 0, "mark": "51.00", "price": "51.00", "exit_costs": "20.00", "pnl": "60.00"},
    }


# --- invariants --------------------------------------------------------------------------------

PRICES = st.integers(min_value=100, max_value=500_000).map(lambda paise: D(paise) / 100)  # ₹1.00 to ₹5,000.00
MODELS = st.sampled_from([FLAT, FREE, CostModel()])


@st.composite
def closed_positions(draw: st.DrawFn, *, exit_at_a_mark: bool = False) -> tuple[ClosedPosition, CostModel]:
    """A closed position priced by a drawn cost model, its costs computed as the book computes them.
    With ``exit_at_a_mark`` the exit price is one of the marks."""
    direction: Direction = draw(st.sampled_from(["LONG", "SHORT"]))
    quantity = draw(st.integers(min_value=1, max_value=2_000))
    model = draw(MODELS)
    entry = draw(PRICES)
    closes = draw(st.lists(PRICES, min_size=1 if exit_at_a_mark else 0, max_size=40))
    exit_price = draw(st.sampled_from(closes)) if exit_at_a_mark else draw(PRICES)
    marked_exit_session = draw(st.booleans()) and bool(closes)
    exit_session = len(closes) - 1 if marked_exit_session else len(closes)
    entry_costs = order_costs("BUY" if direction == "LONG" else "SELL", quantity, entry, model).total
    exit_costs = order_costs(exit_side(direction), quantity, exit_price, model).total
    position = ClosedPosition(
        direction=direction,
        quantity=quantity,
        entry_price=entry,
        entry_costs=entry_costs,
        exit_price=exit_price,
        exit_costs=exit_costs,
        exit_session=exit_session,
        closes=tuple(closes),
        realised_pnl=realised_pnl(
            direction=direction,
            quantity=quantity,
            entry_price=entry,
            exit_price=exit_price,
            entry_costs=entry_costs,
            exit_costs=exit_costs,
        ),
    )
    return position, model


CHECKPOINT_SETS = st.lists(st.integers(min_value=0, max_value=60), max_size=8)


@settings(max_examples=200, deadline=None)
@given(closed_positions(), CHECKPOINT_SETS)
def test_regret_and_drawdown_are_never_negative_and_the_peak_tops_the_path(
    drawn: tuple[ClosedPosition, CostModel], checkpoints: list[int]
) -> None:
    position, model = drawn
    result = position_lifecycle(position, checkpoints=checkpoints, cost_model=model)
    assert result.regret >= 0
    assert result.drawdown_from_peak >= result.regret  # the exit comes after the peak
    assert result.regret == result.peak_pnl - result.final_pnl
    assert all(pnl <= result.peak_pnl for pnl in result.path)
    assert result.path[result.peak_session] == result.peak_pnl
    assert result.path[-1] == result.final_pnl == position.realised_pnl
    assert len(result.path) == position.exit_session + 1 == len(pnl_path(position))
    assert result.vs_inaction == result.final_pnl
    assert result.inaction_better is (result.final_pnl < 0)


@settings(max_examples=200, deadline=None)
@given(closed_positions(), CHECKPOINT_SETS)
def test_the_trajectory_reads_the_path_within_the_life_only(
    drawn: tuple[ClosedPosition, CostModel], checkpoints: list[int]
) -> None:
    position, model = drawn
    result = position_lifecycle(position, checkpoints=checkpoints, cost_model=model)
    sessions = [point.session for point in result.trajectory]
    assert set(sessions) <= set(range(position.exit_session + 1))
    assert set(sessions) == {c for c in checkpoints if c <= position.exit_session}
    assert sessions == sorted(set(sessions))
    assert all(point.pnl == result.path[point.session] for point in result.trajectory)


@settings(max_examples=200, deadline=None)
@given(closed_positions(exit_at_a_mark=True))
def test_the_hindsight_exit_is_at_least_the_real_one_when_the_real_one_was_at_a_mark(
    drawn: tuple[ClosedPosition, CostModel],
) -> None:
    position, model = drawn
    result = position_lifecycle(position, cost_model=model)
    assert result.optimal_exit is not None
    assert result.optimal_exit.pnl >= result.final_pnl
    assert result.optimal_exit.price in position.closes
    # The chosen mark is the best, and the first of the best: each mark's exit worked out here.
    candidates = [_exit_pnl_at(position, close, model) for close in position.closes]
    assert result.optimal_exit.pnl == max(candidates)
    assert result.optimal_exit.session == candidates.index(max(candidates))


def _exit_pnl_at(position: ClosedPosition, price: Decimal, model: CostModel) -> Decimal:
    costs = order_costs(exit_side(position.direction), position.quantity, price, model).total
    gross = (price - position.entry_price) * position.quantity * (1 if position.direction == "LONG" else -1)
    return gross - position.entry_costs - costs


def test_the_result_is_a_frozen_record() -> None:
    position = closed("LONG", 10, entry="100.00", closes=["101"], exit_price="102.00")
    result = position_lifecycle(position, cost_model=FLAT)
    assert isinstance(result, Lifecycle)
    with pytest.raises(AttributeError):
        result.regret = D(0)  # type: ignore[misc]
