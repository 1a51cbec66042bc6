from __future__ import annotations

from decimal import Decimal

import pytest

from vocabulary.costs import CostBreakdown, CostModel, order_costs

NSE_DELIVERY = CostModel()


def test_a_one_lakh_delivery_buy_costs_118_rupees_62_paise() -> None:
    # Turnover 100 x ₹1,000.00 = ₹1,00,000.
    #   brokerage   0                                   =   0.00
    #   STT         0.1%      x 1,00,000                = 100.00
    #   exchange    0.00297%  x 1,00,000                =   2.97
    #   SEBI fee    0.0001%   x 1,00,000                =   0.10
    #   stamp duty  0.015%    x 1,00,000                =  15.00
    #   GST         18% x (0 + 2.97 + 0.10) = 0.5526    =   0.55
    #   total                                           = 118.62
    costs = order_costs("BUY", 100, Decimal("1000.00"), NSE_DELIVERY)
    assert costs == CostBreakdown(
        brokerage=Decimal("0.00"),
        stt=Decimal("100.00"),
        exchange_charge=Decimal("2.97"),
        sebi_fee=Decimal("0.10"),
        stamp_duty=Decimal("15.00"),
        gst=Decimal("0.55"),
    )
    assert costs.total == Decimal("118.62")


def test_a_one_lakh_delivery_sell_pays_no_stamp_duty() -> None:
    # Same as the buy without stamp duty: 0 + 100.00 + 2.97 + 0.10 + 0.00 + 0.55 = 103.62.
    costs = order_costs("SELL", 100, Decimal("1000.00"), NSE_DELIVERY)
    assert costs.stamp_duty == Decimal("0.00")
    assert costs.stt == Decimal("100.00")
    assert costs.total == Decimal("103.62")


def test_to_dict_gives_every_component_and_the_total_as_strings() -> None:
    costs = order_costs("BUY", 100, Decimal("1000.00"), NSE_DELIVERY)
    assert costs.to_dict() == {
        "brokerage": "0.00",
        "stt": "100.00",
        "exchange_charge": "2.97",
        "sebi_fee": "0.10",
        "stamp_duty": "15.00",
        "gst": "0.55",
        "total": "118.62",
    }


def test_each_component_rounds_half_up_to_the_paisa_and_the_total_sums_the_rounded_parts() -> None:
    # Turnover ₹100: STT 0.10; exchange 0.00297 -> 0.00; SEBI 0.0001 -> 0.00;
    # stamp 0.015 -> 0.02 (a half paisa rounds up); GST 18% x 0.00 = 0.00. Total 0.12.
    costs = order_costs("BUY", 1, Decimal("100.00"), NSE_DELIVERY)
    assert (costs.stt, costs.exchange_charge, costs.sebi_fee, costs.stamp_duty, costs.gst) == (
        Decimal("0.10"),
        Decimal("0.00"),
        Decimal("0.00"),
        Decimal("0.02"),
        Decimal("0.00"),
    )
    assert costs.total == Decimal("0.12")


def test_percentage_brokerage_is_capped_and_gst_is_charged_on_it() -> None:
    # 0.03% x 1,00,000 = ₹30, capped at ₹20. GST 18% x (20 + 2.97 + 0.10) = 4.1526 -> 4.15.
    # Total 20 + 100 + 2.97 + 0.10 + 15 + 4.15 = 142.22.
    model = CostModel(brokerage_pct=Decimal("0.03"), brokerage_cap=Decimal(20))
    costs = order_costs("BUY", 100, Decimal("1000.00"), model)
    assert costs.brokerage == Decimal("20.00")
    assert costs.gst == Decimal("4.15")
    assert costs.total == Decimal("142.22")


def test_percentage_brokerage_under_the_cap_is_charged_in_full() -> None:
    # 0.03% x ₹10,000 = ₹3.00, under the ₹20 cap.
    model = CostModel(brokerage_pct=Decimal("0.03"), brokerage_cap=Decimal(20))
    assert order_costs("SELL", 10, Decimal("1000.00"), model).brokerage == Decimal("3.00")


def test_flat_brokerage_is_added_to_the_percentage_part() -> None:
    # ₹15 flat + 0.05% x ₹10,000 = 15 + 5 = ₹20.
    model = CostModel(brokerage_flat=Decimal(15), brokerage_pct=Decimal("0.05"))
    assert order_costs("BUY", 10, Decimal("1000.00"), model).brokerage == Decimal("20.00")


def test_from_mapping_overrides_only_the_named_fields() -> None:
    model = CostModel.from_mapping({"brokerage_flat": "20", "stt_sell_pct": "0.025", "brokerage_cap": "40"})
    assert model.brokerage_flat == Decimal(20)
    assert model.stt_sell_pct == Decimal("0.025")
    assert model.brokerage_cap == Decimal(40)
    assert model.stt_buy_pct == Decimal("0.1")
    assert model.stamp_duty_buy_pct == Decimal("0.015")


def test_from_mapping_with_nothing_gives_the_nse_delivery_defaults() -> None:
    assert CostModel.from_mapping({}) == NSE_DELIVERY


def test_from_mapping_reads_a_blank_cap_as_no_cap() -> None:
    assert CostModel.from_mapping({"brokerage_cap": ""}).brokerage_cap is None


@pytest.mark.parametrize("field", ["brokerage_flat", "brokerage_pct", "brokerage_cap", "stt_buy_pct", "gst_pct"])
def test_from_mapping_rejects_a_negative_field(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        CostModel.from_mapping({field: "-0.01"})


@pytest.mark.parametrize("raw", [0.1, "ten", "NaN", "Infinity", True])
def test_from_mapping_rejects_values_that_are_not_exact_finite_numbers(raw: object) -> None:
    with pytest.raises(ValueError, match="stt_buy_pct"):
        CostModel.from_mapping({"stt_buy_pct": raw})


def test_from_mapping_rejects_an_unknown_field() -> None:
    with pytest.raises(ValueError, match="stt_pct"):
        CostModel.from_mapping({"stt_pct": "0.1"})


def test_a_cost_model_built_directly_rejects_negative_and_float_fields() -> None:
    with pytest.raises(ValueError, match="sebi_fee_pct"):
        CostModel(sebi_fee_pct=Decimal("-1"))
    with pytest.raises(TypeError, match="gst_pct"):
        CostModel(gst_pct=18.0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("side", "quantity", "price"),
    [
        ("HOLD", 10, Decimal("100")),
        ("BUY", 0, Decimal("100")),
        ("BUY", True, Decimal("100")),
        ("SELL", 10, Decimal("0")),
    ],
)
def test_it_rejects_an_order_that_cannot_exist(side: str, quantity: int, price: Decimal) -> None:
    with pytest.raises(ValueError):
        order_costs(side, quantity, price, NSE_DELIVERY)  # type: ignore[arg-type]
