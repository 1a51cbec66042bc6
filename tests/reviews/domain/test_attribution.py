from __future__ import annotations

from dataclasses import replace
from decimal import ROUND_HALF_UP, Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.domain.attribution import (
    Attribution,
    AttributionInputError,
    ClosedTrade,
    OpenPosition,
    WaterfallRow,
    attribute,
    split_trade,
    waterfall_rows,
)
from vocabulary.costs import CostBreakdown, CostModel, order_costs
from vocabulary.exits import realised_pnl
from vocabulary.fills import entry_side, exit_side, fill_price
from vocabulary.trade import Direction

NSE_DELIVERY = CostModel()
TICK = Decimal("0.05")
NO_COSTS = CostBreakdown(*(Decimal("0.00"),) * 6)


def D(value: str) -> Decimal:
    return Decimal(value)


def charges(**lines: str) -> CostBreakdown:
    values = {"brokerage": "0", "stt": "0", "exchange_charge": "0", "sebi_fee": "0", "stamp_duty": "0", "gst": "0"}
    values.update(lines)
    return CostBreakdown(**{name: Decimal(value).quantize(Decimal("0.01")) for name, value in values.items()})


def trade(
    direction: Direction,
    quantity: int,
    *,
    entry: tuple[str, str],
    exit: tuple[str, str],
    entry_costs: CostBreakdown | None = None,
    exit_costs: CostBreakdown | None = None,
    manual_exit: bool = False,
    unrealised_at_start: str = "0",
    position_id: int | None = None,
    dividends: str = "0",
) -> ClosedTrade:
    """A closed trade whose realised PnL is the book's own figure; ``entry``/``exit`` are (reference, fill).
    Without costs given, both legs pay the default NSE delivery charges on their fills."""
    entry_reference, entry_fill = (D(price) for price in entry)
    exit_reference, exit_fill = (D(price) for price in exit)
    if entry_costs is None:
        entry_costs = order_costs(entry_side(direction), quantity, entry_fill, NSE_DELIVERY)
    if exit_costs is None:
        exit_costs = order_costs(exit_side(direction), quantity, exit_fill, NSE_DELIVERY)
    return ClosedTrade(
        direction=direction,
        quantity=quantity,
        entry_price=entry_fill,
        exit_price=exit_fill,
        entry_reference=entry_reference,
        exit_reference=exit_reference,
        entry_costs=entry_costs,
        exit_costs=exit_costs,
        realised_pnl=realised_pnl(
            direction=direction,
            quantity=quantity,
            entry_price=entry_fill,
            exit_price=exit_fill,
            entry_costs=entry_costs.total,
            exit_costs=exit_costs.total,
        )
        + D(dividends),
        manual_exit=manual_exit,
        unrealised_at_start=D(unrealised_at_start),
        position_id=position_id,
        dividends=D(dividends),
    )


def identity_sum(attribution: Attribution) -> Decimal:
    return (
        attribution.gains
        + attribution.losses
        + attribution.slippage
        + attribution.costs
        + attribution.dividends
        + attribution.manual
        + attribution.unrealised
        + attribution.inference
    )


# --- The worked example: one winner, one loser, one exit by hand, two open positions. -------------

# LONG 100: reference 100.00 filled at 100.05 (a BUY pays more); exit reference 110.00 filled at 109.95.
#   entry BUY 100 @ 100.05, turnover 10,005:  STT 10.005 → 10.01, exchange 0.2971485 → 0.30,
#     SEBI 0.010005 → 0.01, stamp 1.50075 → 1.50, GST 18% x 0.31 = 0.0558 → 0.06;  total 11.88
#   exit SELL 100 @ 109.95, turnover 10,995:  STT 10.995 → 11.00, exchange 0.3265515 → 0.33,
#     SEBI 0.010995 → 0.01, stamp 0, GST 18% x 0.34 = 0.0612 → 0.06;               total 11.40
#   move at references (110.00 − 100.00) x 100 = 1,000.00; at fills (109.95 − 100.05) x 100 = 990.00
#   slippage 990.00 − 1,000.00 = −10.00; realised 990.00 − 11.88 − 11.40 = 966.72
#   It was open at the period's start, marked then at +300.00.
WINNER = trade("LONG", 100, entry=("100.00", "100.05"), exit=("110.00", "109.95"), unrealised_at_start="300.00")

# SHORT 50: reference 200.00 sold at 199.90; bought back at 210.10 against a reference of 210.00.
#   entry SELL 50 @ 199.90, turnover 9,995:   STT 9.995 → 10.00, exchange 0.2968515 → 0.30,
#     SEBI 0.009995 → 0.01, stamp 0, GST 18% x 0.31 = 0.0558 → 0.06;               total 10.37
#   exit BUY 50 @ 210.10, turnover 10,505:    STT 10.505 → 10.51, exchange 0.3119985 → 0.31,
#     SEBI 0.010505 → 0.01, stamp 1.57575 → 1.58, GST 18% x 0.32 = 0.0576 → 0.06;  total 12.47
#   move −(210.00 − 200.00) x 50 = −500.00; at fills −(210.10 − 199.90) x 50 = −510.00
#   slippage −10.00; realised −510.00 − 10.37 − 12.47 = −532.84
LOSER = trade("SHORT", 50, entry=("200.00", "199.90"), exit=("210.00", "210.10"))

# LONG 10 closed by hand: (47.95 − 50.05) x 10 = −21.00, less ₹20 brokerage a leg: −61.00.
BY_HAND = trade(
    "LONG",
    10,
    entry=("50.00", "50.05"),
    exit=("48.00", "47.95"),
    entry_costs=charges(brokerage="20"),
    exit_costs=charges(brokerage="20"),
    manual_exit=True,
)

# Opened in the period, marked +150.00 at its end; and one marked +200.00 at the start, +120.00 at the end.
OPEN = [OpenPosition(D("0.00"), D("150.00")), OpenPosition(D("200.00"), D("120.00"))]


def worked_example(max_drawdown: Decimal | None = None) -> Attribution:
    # Model calls cost ₹12.3456 in all: ₹12.35 to the paisa.
    return attribute([WINNER, LOSER, BY_HAND], OPEN, D("12.3456"), max_drawdown=max_drawdown)


def test_the_worked_example_costs_are_the_default_nse_charges_computed_above() -> None:
    assert WINNER.entry_costs == charges(
        stt="10.01", exchange_charge="0.30", sebi_fee="0.01", stamp_duty="1.50", gst="0.06"
    )
    assert WINNER.exit_costs == charges(stt="11.00", exchange_charge="0.33", sebi_fee="0.01", gst="0.06")
    assert LOSER.entry_costs == charges(stt="10.00", exchange_charge="0.30", sebi_fee="0.01", gst="0.06")
    assert LOSER.exit_costs == charges(
        stt="10.51", exchange_charge="0.31", sebi_fee="0.01", stamp_duty="1.58", gst="0.06"
    )
    assert (WINNER.realised_pnl, LOSER.realised_pnl, BY_HAND.realised_pnl) == (D("966.72"), D("-532.84"), D("-61.00"))


def test_a_trade_splits_into_its_move_slippage_and_charges() -> None:
    split = split_trade(WINNER)
    assert (split.move, split.slippage, split.charges.total, split.realised) == (
        D("1000.00"),
        D("-10.00"),
        D("23.28"),
        D("966.72"),
    )
    short = split_trade(LOSER)
    assert (short.move, short.slippage, short.charges.total, short.realised) == (
        D("-500.00"),
        D("-10.00"),
        D("22.84"),
        D("-532.84"),
    )


def test_the_worked_example_attributes_every_rupee() -> None:
    result = worked_example()
    assert result.gains == D("1000.00")  # the LONG's move
    assert result.losses == D("-500.00")  # the SHORT's move
    assert result.slippage == D("-20.00")  # 10.00 on each
    # The strategy's two trades, line by line (the exit by hand is not among them):
    #   STT 10.01 + 11.00 + 10.00 + 10.51 = 41.52; exchange 0.30 + 0.33 + 0.30 + 0.31 = 1.24;
    #   SEBI 4 x 0.01 = 0.04; stamp 1.50 + 1.58 = 3.08; GST 4 x 0.06 = 0.24; total 46.12 (= 23.28 + 22.84)
    assert result.charges == charges(
        stt="41.52", exchange_charge="1.24", sebi_fee="0.04", stamp_duty="3.08", gst="0.24"
    )
    assert result.costs == D("-46.12")
    assert result.manual == D("-61.00")
    # Marks: +150.00 (new) + (120.00 − 200.00) on the open ones, less the closed LONG's +300.00 carried in.
    assert result.unrealised == D("-230.00")
    assert result.inference == D("-12.35")
    # 966.72 − 532.84 − 61.00 − 230.00 − 12.35 = 130.53
    assert result.net == D("130.53")
    assert identity_sum(result) == result.net
    assert (result.strategy_trades, result.manual_trades) == (2, 1)


def test_the_derived_figures_of_the_worked_example() -> None:
    result = worked_example(max_drawdown=D("261.06"))
    assert result.strategy_realised == D("433.88")  # 1,000 − 500 − 20 − 46.12 = 966.72 − 532.84
    assert result.realised == D("372.88")  # and the −61.00 by hand
    assert result.operational_cost == D("-58.47")  # −46.12 − 12.35
    assert result.risk_adjusted_return == D("0.50")  # 130.53 / 261.06


def test_the_waterfall_reads_in_order_and_ends_at_the_net() -> None:
    rows = waterfall_rows(worked_example())
    assert rows == [
        WaterfallRow("Trading gains", D("1000.00")),
        WaterfallRow("Trading losses", D("-500.00")),
        WaterfallRow("Slippage", D("-20.00")),
        WaterfallRow("Brokerage", D("0.00")),
        WaterfallRow("STT", D("-41.52")),
        WaterfallRow("Exchange charges", D("-1.24")),
        WaterfallRow("SEBI fee", D("-0.04")),
        WaterfallRow("Stamp duty", D("-3.08")),
        WaterfallRow("GST", D("-0.24")),
        WaterfallRow("Dividends", D("0.00")),
        WaterfallRow("Closed by hand", D("-61.00")),
        WaterfallRow("Unrealised change", D("-230.00")),
        WaterfallRow("Inference", D("-12.35")),
        WaterfallRow("Net result", D("130.53")),
    ]
    assert sum((row.amount for row in rows[:-1]), start=Decimal(0)) == rows[-1].amount
    # A zero charge is "0.00", never "-0.00", on the page.
    assert str(rows[3].amount) == "0.00"


def test_an_empty_period_is_all_zeros_with_no_risk_adjusted_return() -> None:
    result = attribute([], [], Decimal(0))
    assert identity_sum(result) == result.net == D("0.00")
    assert result.charges == NO_COSTS
    assert result.risk_adjusted_return is None
    assert [row.amount for row in waterfall_rows(result)] == [D("0.00")] * 14


def test_only_inference_is_a_loss_of_its_cost() -> None:
    # Not trading at all costs nothing but the models: the net is minus the bill.
    result = attribute([], [], D("0.005"))
    assert result.inference == result.net == D("-0.01")  # 0.005 rounds half up to the paisa


def test_a_trade_whose_move_is_nil_is_neither_a_gain_nor_a_loss() -> None:
    flat = trade(
        "LONG", 10, entry=("100.00", "100.05"), exit=("100.00", "99.95"), entry_costs=NO_COSTS, exit_costs=NO_COSTS
    )
    result = attribute([flat], [], Decimal(0))
    assert (result.gains, result.losses, result.slippage, result.net) == (D("0.00"), D("0.00"), D("-1.00"), D("-1.00"))


def test_a_winning_move_eaten_by_slippage_and_charges_stays_a_gain_and_its_costs_show_apart() -> None:
    # LONG 10: +0.10 a share at references (+1.00) but the fills gave back 0.10 and ₹5 charges were paid.
    thin = trade(
        "LONG",
        10,
        entry=("100.00", "100.05"),
        exit=("100.10", "100.05"),
        entry_costs=charges(brokerage="2.50"),
        exit_costs=charges(brokerage="2.50"),
    )
    result = attribute([thin], [], Decimal(0))
    assert (result.gains, result.slippage, result.costs, result.net) == (D("1.00"), D("-1.00"), D("-5.00"), D("-5.00"))


def test_an_exit_by_hand_is_the_persons_result_and_none_of_the_strategys() -> None:
    result = attribute([BY_HAND], [], Decimal(0))
    assert result.manual == result.net == D("-61.00")
    assert (result.gains, result.losses, result.slippage, result.costs) == (D("0.00"),) * 4
    assert (result.strategy_trades, result.manual_trades) == (0, 1)


def test_consecutive_periods_add_up_to_the_trades_realised_result() -> None:
    # Period one: WINNER's position opens and is marked +300.00 at the end; period two: it closes.
    first = attribute([], [OpenPosition(D("0.00"), D("300.00"))], Decimal(0))
    second = attribute([WINNER], [], Decimal(0))
    assert first.net == D("300.00")
    assert second.net == D("666.72")  # 966.72 realised, less the 300.00 already reported
    assert first.net + second.net == WINNER.realised_pnl


def test_the_risk_adjusted_return_is_none_without_a_drawdown_and_signed_with_the_net() -> None:
    assert worked_example(max_drawdown=D("0")).risk_adjusted_return is None
    assert worked_example(max_drawdown=None).risk_adjusted_return is None
    losing = attribute([LOSER], [], Decimal(0), max_drawdown=D("532.84"))
    assert losing.risk_adjusted_return == D("-1.00")


# --- Refusals: a record the book could not have written is refused when built. ---------------------


def test_a_realised_figure_one_paisa_off_the_books_arithmetic_is_refused() -> None:
    with pytest.raises(AttributionInputError, match=r"position 7: the realised PnL 966.71 disagrees .* 966.72"):
        replace(WINNER, realised_pnl=D("966.71"), position_id=7)


def test_a_realised_figure_gross_of_costs_is_refused() -> None:
    with pytest.raises(AttributionInputError, match="disagrees with the book's arithmetic"):
        replace(WINNER, realised_pnl=D("990.00"))


@pytest.mark.parametrize(
    ("direction", "entry", "exit"),
    [
        ("LONG", ("100.05", "100.00"), ("110.00", "109.95")),  # a BUY filled below its reference
        ("LONG", ("100.00", "100.05"), ("109.95", "110.00")),  # a SELL filled above its reference
        ("SHORT", ("199.90", "200.00"), ("210.00", "210.10")),  # the SHORT's sell filled above
        ("SHORT", ("200.00", "199.90"), ("210.10", "210.00")),  # its buy-back filled below
    ],
)
def test_a_fill_better_than_its_reference_is_refused(
    direction: Direction, entry: tuple[str, str], exit: tuple[str, str]
) -> None:
    with pytest.raises(AttributionInputError, match="is better than its reference price"):
        trade(direction, 10, entry=entry, exit=exit, entry_costs=NO_COSTS, exit_costs=NO_COSTS)


def test_a_fill_at_its_reference_is_accepted_as_no_slippage() -> None:
    exact = trade(
        "LONG", 10, entry=("100.00", "100.00"), exit=("101.00", "101.00"), entry_costs=NO_COSTS, exit_costs=NO_COSTS
    )
    assert split_trade(exact).slippage == D("0.00")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"direction": "FLAT"}, "direction must be LONG or SHORT"),
        ({"quantity": 0}, "quantity must be a positive whole number"),
        ({"quantity": True}, "quantity must be a positive whole number"),
        ({"exit_reference": D("0")}, "exit_reference must be a positive, finite Decimal"),
        ({"entry_price": D("NaN")}, "entry_price must be a positive, finite Decimal"),
        ({"realised_pnl": D("966.725")}, "realised_pnl must be a finite Decimal amount to the paisa"),
        ({"unrealised_at_start": D("0.001")}, "unrealised_at_start must be a finite Decimal amount to the paisa"),
        ({"entry_costs": replace(NO_COSTS, stt=D("-0.01"))}, "entry costs: stt must not be negative"),
        (
            {"exit_costs": replace(NO_COSTS, gst=D("0.005"))},
            "exit costs: gst must be a finite Decimal amount to the paisa",
        ),
    ],
)
def test_malformed_records_are_refused_with_the_field_named(change: dict[str, object], message: str) -> None:
    with pytest.raises(AttributionInputError, match=message):
        replace(WINNER, **change)  # type: ignore[arg-type]


def test_open_positions_and_the_inference_bill_are_checked_too() -> None:
    with pytest.raises(AttributionInputError, match=r"position 3: unrealised_at_end .* to the paisa"):
        OpenPosition(D("0.00"), D("1.234"), position_id=3)
    with pytest.raises(AttributionInputError, match="inference cost must be a finite, non-negative Decimal"):
        attribute([], [], D("-0.01"))
    with pytest.raises(AttributionInputError, match="inference cost"):
        attribute([], [], 0.5)  # type: ignore[arg-type]
    with pytest.raises(AttributionInputError, match="max drawdown must be a finite amount"):
        attribute([], [], Decimal(0), max_drawdown=D("-1"))


# --- Properties: whatever the trades, the parts add up to the whole and exits by hand stay apart. --

ticks = st.integers(min_value=20, max_value=60_000)  # ₹1.00 to ₹3,000.00 on the 0.05 tick
paise = st.integers(min_value=-5_000_000, max_value=5_000_000).map(lambda n: Decimal(n) / 100)


@st.composite
def closed_trades(draw: st.DrawFn) -> ClosedTrade:
    direction: Direction = draw(st.sampled_from(["LONG", "SHORT"]))
    quantity = draw(st.integers(min_value=1, max_value=5_000))
    entry_reference, exit_reference = draw(ticks) * TICK, draw(ticks) * TICK
    bps = draw(st.sampled_from([Decimal(0), Decimal(5), Decimal("12.5"), Decimal(50)]))
    entry_fill = fill_price(side=entry_side(direction), reference=entry_reference, slippage_bps=bps, tick=TICK)
    exit_fill = fill_price(side=exit_side(direction), reference=exit_reference, slippage_bps=bps, tick=TICK)
    return trade(
        direction,
        quantity,
        entry=(str(entry_reference), str(entry_fill)),
        exit=(str(exit_reference), str(exit_fill)),
        manual_exit=draw(st.booleans()),
        unrealised_at_start=str(draw(st.one_of(st.just(Decimal("0.00")), paise))),
        dividends=str(draw(st.one_of(st.just(Decimal("0.00")), paise))),
    )


open_positions = st.builds(OpenPosition, paise, paise)
inference_bills = st.integers(min_value=0, max_value=10_000_000).map(lambda n: Decimal(n) / 10_000)


@settings(max_examples=200, deadline=None)
@given(st.lists(closed_trades(), max_size=12), st.lists(open_positions, max_size=5), inference_bills)
def test_the_components_add_up_to_the_net_to_the_paisa(
    closed: list[ClosedTrade], held: list[OpenPosition], inference: Decimal
) -> None:
    result = attribute(closed, held, inference)
    assert identity_sum(result) == result.net
    rows = waterfall_rows(result)
    assert sum((row.amount for row in rows[:-1]), start=Decimal(0)) == rows[-1].amount == result.net
    # The net is the book's own figures: realised + change in marks − the bill to the paisa.
    expected = (
        sum((t.realised_pnl for t in closed), start=Decimal(0))
        + sum((p.unrealised_at_end - p.unrealised_at_start for p in held), start=Decimal(0))
        - sum((t.unrealised_at_start for t in closed), start=Decimal(0))
        - inference.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    )
    assert result.net == expected
    assert result.realised == sum((t.realised_pnl for t in closed), start=Decimal(0))
    assert result.net == result.net.quantize(Decimal("0.01"))
    assert result.gains >= 0 >= result.losses
    assert result.slippage <= 0 and result.costs <= 0 and result.inference <= 0
    assert result.dividends == sum((t.dividends for t in closed), start=Decimal(0))


@settings(max_examples=200, deadline=None)
@given(st.lists(closed_trades(), max_size=12))
def test_exits_by_hand_count_in_manual_and_never_in_the_strategys_figures(closed: list[ClosedTrade]) -> None:
    result = attribute(closed, [], Decimal(0))
    by_hand = [t for t in closed if t.manual_exit]
    strategy_only = attribute([t for t in closed if not t.manual_exit], [], Decimal(0))
    hand_only = attribute(by_hand, [], Decimal(0))
    assert result.manual == sum((t.realised_pnl - t.dividends for t in by_hand), start=Decimal(0))
    assert (result.manual_trades, result.strategy_trades) == (len(by_hand), len(closed) - len(by_hand))
    # Taking the exits by hand away changes none of the strategy's figures...
    strategy_figures = ("gains", "losses", "slippage", "charges")
    assert [getattr(result, name) for name in strategy_figures] == [
        getattr(strategy_only, name) for name in strategy_figures
    ]
    assert strategy_only.manual == D("0.00")
    # ... and the exits by hand alone leave the strategy's columns empty.
    assert (hand_only.gains, hand_only.losses, hand_only.slippage, hand_only.charges) == (
        D("0.00"),
        D("0.00"),
        D("0.00"),
        NO_COSTS,
    )
    expected_charges = sum(
        (t.entry_costs.total + t.exit_costs.total for t in closed if not t.manual_exit), start=Decimal(0)
    )
    assert result.charges.total == expected_charges


def test_dividends_are_their_own_line_for_strategy_and_hand_exits_alike() -> None:
    held_long = trade("LONG", 100, entry=("100.00", "100.10"), exit=("110.00", "109.90"), dividends="250.00")
    shorted = trade(
        "SHORT", 50, entry=("200.00", "199.80"), exit=("190.00", "190.20"), manual_exit=True, dividends="-75.00"
    )
    result = attribute([held_long, shorted], [], Decimal(0))
    assert result.dividends == D("175.00")
    assert result.manual == shorted.realised_pnl + D("75.00")  # the short's exit by hand, without its dividend
    assert split_trade(held_long).realised == held_long.realised_pnl
    assert identity_sum(result) == result.net == held_long.realised_pnl + shorted.realised_pnl
    assert WaterfallRow("Dividends", D("175.00")) in waterfall_rows(result)


def test_a_realised_figure_without_its_dividend_is_refused() -> None:
    honest = trade("LONG", 100, entry=("100.00", "100.10"), exit=("110.00", "109.90"), dividends="250.00")
    with pytest.raises(AttributionInputError, match=r"dividends 250\.00"):
        replace(honest, realised_pnl=honest.realised_pnl - D("250.00"))
