from __future__ import annotations

import json
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from trading.book.domain.risk import (
    CHECK_NAMES,
    PortfolioReader,
    PortfolioState,
    RiskDecision,
    RiskLimits,
    evaluate_risk,
    format_rupees,
)

# A book where this trade passes every check with room to spare:
# risk budget 1% of ₹10,00,000 = ₹10,000; stop distance ₹60 -> floor(166.67) = 166 shares;
# risk ₹9,960, notional ₹1,66,000 (under 20% = ₹2,00,000, under cash ₹5,00,000,
# and ₹3,00,000 + ₹1,66,000 under the ₹10,00,000 exposure cap).
LIMITS = RiskLimits(daily_loss_cap=Decimal("20000"))
PORTFOLIO = PortfolioState(
    capital=Decimal("1000000"),
    available_cash=Decimal("500000"),
    open_positions=2,
    gross_exposure=Decimal("300000"),
    realised_loss_today=Decimal("0"),
)
LONG_LEVELS = {"direction": "LONG", "entry": Decimal("1000"), "stop": Decimal("940"), "target": Decimal("1120")}


def evaluate(
    *, lot_size: int = 1, limits: RiskLimits = LIMITS, portfolio: PortfolioState = PORTFOLIO, **levels: Any
) -> RiskDecision:
    return evaluate_risk(**{**LONG_LEVELS, **levels}, lot_size=lot_size, limits=limits, portfolio=portfolio)


def test_the_baseline_trade_passes_every_check() -> None:
    decision = evaluate()
    assert decision.approved is True
    assert decision.rejections == []


def test_quantity_is_the_risk_budget_over_the_stop_distance_rounded_down() -> None:
    decision = evaluate()
    assert decision.stop_distance == Decimal("60")
    assert decision.quantity == 166
    assert decision.risk_amount == Decimal("9960")
    assert decision.notional == Decimal("166000")


def test_a_short_is_sized_from_the_distance_up_to_its_stop() -> None:
    decision = evaluate(
        direction="SHORT",
        entry=Decimal("500.00"),
        stop=Decimal("527.35"),
        target=Decimal("445.30"),
        limits=replace(LIMITS, allow_short=True),
    )
    # ₹10,000 / ₹27.35 = 365.6 -> 365 shares.
    assert decision.approved is True
    assert (decision.quantity, decision.risk_amount, decision.notional) == (
        365,
        Decimal("9982.75"),
        Decimal("182500.00"),
    )


def test_quantity_is_rounded_down_to_whole_lots() -> None:
    decision = evaluate(lot_size=50)
    # 166 shares make three full lots of 50.
    assert decision.quantity == 150
    assert decision.risk_amount == Decimal("9000")


def test_a_sizing_that_lands_exactly_on_a_lot_is_kept() -> None:
    assert evaluate(stop=Decimal("950"), lot_size=50).quantity == 200


PORTFOLIO_CHANGES: list[tuple[str, dict[str, Any]]] = [
    ("size_nonzero", {"lot_size": 500}),
    ("daily_loss_cap", {"portfolio": replace(PORTFOLIO, realised_loss_today=Decimal("15000"))}),
    ("margin_sufficient", {"portfolio": replace(PORTFOLIO, available_cash=Decimal("100000"))}),
    ("max_notional_pct", {"limits": replace(LIMITS, max_notional_pct=Decimal("10"), max_instrument_pct=Decimal(20))}),
    ("max_positions", {"portfolio": replace(PORTFOLIO, open_positions=5)}),
    ("exposure_cap", {"portfolio": replace(PORTFOLIO, gross_exposure=Decimal("900000"))}),
    ("instrument_concentration", {"portfolio": replace(PORTFOLIO, instrument_exposure=Decimal("100000"))}),
    ("short_allowed", {"direction": "SHORT", "stop": Decimal("1060"), "target": Decimal("880")}),
]


@pytest.mark.parametrize(("failing", "change"), PORTFOLIO_CHANGES, ids=[name for name, _ in PORTFOLIO_CHANGES])
def test_each_check_can_reject_a_fixed_size_on_its_own(failing: str, change: dict[str, Any]) -> None:
    # A fixed size is what approval and fill re-check: nothing is resized there.
    quantity = 0 if failing == "size_nonzero" else 166
    decision = evaluate(quantity=quantity, **change)
    assert decision.approved is False
    assert decision.rejections == [failing]


FITTING: list[tuple[str, dict[str, Any], int]] = [
    # ₹5,000 of loss room / ₹60 = 83 shares.
    ("daily_loss_cap", {"portfolio": replace(PORTFOLIO, realised_loss_today=Decimal("15000"))}, 83),
    # ₹1,00,000 of cash / ₹1,000 = 100 shares.
    ("margin_sufficient", {"portfolio": replace(PORTFOLIO, available_cash=Decimal("100000"))}, 100),
    (
        "max_notional_pct",
        {"limits": replace(LIMITS, max_notional_pct=Decimal("10"), max_instrument_pct=Decimal(20))},
        100,
    ),
    # ₹1,00,000 left under the exposure cap.
    ("exposure_cap", {"portfolio": replace(PORTFOLIO, gross_exposure=Decimal("900000"))}, 100),
    # 20% of capital for one instrument, ₹1,00,000 of it already used.
    ("instrument_concentration", {"portfolio": replace(PORTFOLIO, instrument_exposure=Decimal("100000"))}, 100),
]


@pytest.mark.parametrize(("limit", "change", "fitted"), FITTING, ids=[name for name, _, _ in FITTING])
def test_a_size_too_big_for_a_limit_is_cut_down_to_fit_and_says_so(
    limit: str, change: dict[str, Any], fitted: int
) -> None:
    decision = evaluate(**change)
    assert decision.approved is True, decision.rejections
    assert decision.quantity == fitted
    assert decision.sizing.startswith(f"sized down from 166 to {fitted} to fit {limit}")
    assert decision.sizing in {check.name: check.detail for check in decision.checks}["size_nonzero"]


def test_the_demo_case_of_a_notional_just_over_the_cap_is_sized_to_the_cap() -> None:
    # The demo failed 6 of 12 theses on this check alone (₹2,03,058 against ₹2,00,000).
    decision = evaluate(entry=Decimal("2030.55"), stop=Decimal("1930.55"), target=Decimal("2230.55"))
    assert decision.approved is True
    assert decision.quantity == 98 and decision.notional <= Decimal("200000")
    assert "max_notional_pct" in decision.sizing


NO_ROOM: list[tuple[str, dict[str, Any]]] = [
    # Each leaves room for 50 shares; the risk budget asks for 166, one lot of 100.
    ("daily_loss_cap", {"portfolio": replace(PORTFOLIO, realised_loss_today=Decimal("17000"))}),
    ("margin_sufficient", {"portfolio": replace(PORTFOLIO, available_cash=Decimal("50000"))}),
    ("max_notional_pct", {"limits": replace(LIMITS, max_notional_pct=Decimal("5"), max_instrument_pct=Decimal(20))}),
    ("exposure_cap", {"portfolio": replace(PORTFOLIO, gross_exposure=Decimal("950000"))}),
    ("instrument_concentration", {"portfolio": replace(PORTFOLIO, instrument_exposure=Decimal("150000"))}),
]


@pytest.mark.parametrize(("limit", "change"), NO_ROOM, ids=[name for name, _ in NO_ROOM])
def test_a_limit_with_no_room_for_one_lot_rejects_and_names_itself(limit: str, change: dict[str, Any]) -> None:
    decision = evaluate(lot_size=100, **change)
    assert decision.approved is False
    assert decision.quantity == 0
    assert decision.rejections == ["size_nonzero", limit]
    failing = {check.name: check.detail for check in decision.checks}[limit]
    assert failing.startswith("no room for one lot")


def test_a_short_is_refused_by_its_own_check_where_the_account_cannot_carry_one() -> None:
    decision = evaluate(direction="SHORT", stop=Decimal("1060"), target=Decimal("880"))
    assert decision.rejections == ["short_allowed"]
    detail = {check.name: check.detail for check in decision.checks}["short_allowed"]
    assert "cash delivery" in detail


def test_working_orders_take_slots_and_cash_like_positions() -> None:
    book = replace(PORTFOLIO, open_positions=3, working_orders=2)
    decision = evaluate(portfolio=book)
    assert decision.rejections == ["max_positions"]
    detail = {check.name: check.detail for check in decision.checks}["max_positions"]
    assert detail == "3 open position(s) + 2 working order(s) = 5 ≥ limit 5"


@pytest.mark.parametrize(
    "levels",
    [
        {"target": Decimal("990")},
        {"stop": Decimal("1010")},
        {"stop": Decimal("1000")},
        {"direction": "SHORT"},
        {"stop": Decimal("-5")},
    ],
    ids=["long-target-below-entry", "long-stop-above-entry", "stop-on-entry", "short-with-long-levels", "negative"],
)
def test_a_degenerate_thesis_is_rejected_and_sized_at_zero(levels: dict[str, Any]) -> None:
    decision = evaluate(limits=replace(LIMITS, allow_short=True), **levels)
    # A thesis that cannot be traded gets no size, so size_nonzero necessarily fails with it;
    # every check that depends on the portfolio still passes at zero size.
    assert decision.rejections == ["degenerate_thesis", "size_nonzero"]
    assert (decision.quantity, decision.risk_amount, decision.notional) == (0, Decimal(0), Decimal(0))


def test_every_check_is_reported_in_order_even_when_several_fail() -> None:
    broke = replace(PORTFOLIO, available_cash=Decimal("0"), open_positions=9, realised_loss_today=Decimal("50000"))
    decision = evaluate(portfolio=broke, quantity=166)
    assert tuple(check.name for check in decision.checks) == CHECK_NAMES
    assert len(CHECK_NAMES) == 9
    assert decision.rejections == ["daily_loss_cap", "margin_sufficient", "max_positions"]


@pytest.mark.parametrize(
    ("boundary", "change"),
    [
        ("daily loss exactly at the cap", {"portfolio": replace(PORTFOLIO, realised_loss_today=Decimal("10040"))}),
        ("cash exactly the notional", {"portfolio": replace(PORTFOLIO, available_cash=Decimal("166000"))}),
        ("exposure exactly at the cap", {"portfolio": replace(PORTFOLIO, gross_exposure=Decimal("834000"))}),
        ("one slot left", {"portfolio": replace(PORTFOLIO, open_positions=4)}),
    ],
)
def test_a_limit_that_is_met_exactly_still_passes(boundary: str, change: dict[str, Any]) -> None:
    assert evaluate(**change).approved is True, boundary


def test_a_profitable_day_does_not_widen_the_daily_loss_cap() -> None:
    in_profit = replace(PORTFOLIO, realised_loss_today=Decimal("-50000"))
    tight = replace(LIMITS, daily_loss_cap=Decimal("9000"))
    assert evaluate(portfolio=in_profit, limits=tight, quantity=166).rejections == ["daily_loss_cap"]


def test_details_state_the_numbers_in_rupees() -> None:
    decision = evaluate(
        limits=replace(LIMITS, max_notional_pct=Decimal("10"), max_instrument_pct=Decimal(20)), quantity=166
    )
    details = {check.name: check.detail for check in decision.checks}
    assert details["max_notional_pct"] == ("notional ₹1,66,000.00 > ₹1,00,000.00 (10% of capital ₹10,00,000.00)")
    assert details["daily_loss_cap"] == ("loss today ₹0.00 + trade risk ₹9,960.00 = ₹9,960.00 ≤ daily cap ₹20,000.00")
    assert details["max_positions"] == "2 open position(s) < limit 5"


def test_the_decision_serialises_to_json_with_decimals_as_strings() -> None:
    payload = evaluate().to_dict()
    assert json.loads(json.dumps(payload)) == payload
    assert payload["approved"] is True
    assert (payload["quantity"], payload["risk_amount"], payload["notional"]) == (166, "9960", "166000")
    assert payload["stop_distance"] == "60"
    assert [check["name"] for check in payload["checks"]] == list(CHECK_NAMES)
    assert payload["rejections"] == []


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        ("0", "₹0.00"),
        ("999.5", "₹999.50"),
        ("120000", "₹1,20,000.00"),
        ("12345678.905", "₹1,23,45,678.91"),
        ("-2500", "-₹2,500.00"),
    ],
)
def test_rupees_are_grouped_in_lakhs_and_crores(amount: str, text: str) -> None:
    assert format_rupees(Decimal(amount)) == text


def test_a_lot_size_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="lot_size"):
        evaluate(lot_size=0)


def test_limits_refuse_a_risk_percentage_that_is_not_positive() -> None:
    with pytest.raises(ValueError, match="risk_per_trade_pct"):
        RiskLimits(daily_loss_cap=Decimal("1000"), risk_per_trade_pct=Decimal("0"))


def test_an_account_row_can_serve_as_a_portfolio_reader() -> None:
    class FixedAccount:
        def state(self) -> PortfolioState:
            return PORTFOLIO

    reader: PortfolioReader = FixedAccount()
    assert evaluate(portfolio=reader.state()).approved is True
