"""The grounding check: every number a narrative cites is read back (rupees, grouping, signs,
percentages, thousands) and flagged unless the hard part holds it within the narrative's own
rounding."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.grounding import cited_numbers, hard_figures, is_grounded, ungrounded

D = Decimal

HARD = {
    "attribution": {"net": "-1234.50", "gains": "98765.43", "inference": "-0.36"},
    "inaction": {"positions": 4, "beaten_by_inaction": 3, "superiority": "0.7500"},
    "calibration": {"analyst_ece": 0.3125, "alarm": True},
    "positions": [{"id": 42, "symbol": "RELIANCE", "realised_pnl": "1500.00", "closed_on": "2026-11-20"}],
}


def values(text: str) -> list[tuple[str, Decimal]]:
    return [(number.text, number.value) for number in cited_numbers(text)]


def grounded(text: str, hard: object = HARD) -> bool:
    (number,) = cited_numbers(text)
    return is_grounded(number, hard_figures(hard))


def test_numbers_are_read_with_their_currency_grouping_sign_and_suffix() -> None:
    assert values("net -₹1,234.50, then ₹-1234.50 and +12% with 75% of 4 trades") == [
        ("-₹1,234.50", D("-1234.50")),
        ("₹-1234.50", D("-1234.50")),
        ("+12%", D("12")),
        ("75%", D("75")),
        ("4", D("4")),
    ]
    assert values("a loss of ₹1,23,456.78, about 1.2k, 3 lakh, 2 crore, 2.5x, Rs. 500, INR 20, −7") == [
        ("₹1,23,456.78", D("123456.78")),
        ("1.2k", D("1200.0")),
        ("3 lakh", D("300000")),
        ("2 crore", D("20000000")),
        ("2.5x", D("2.5")),
        ("Rs. 500", D("500")),
        ("INR 20", D("20")),
        ("−7", D("-7")),
    ]


def test_codes_tickers_dates_and_dashes_are_not_figures() -> None:
    assert values("H-7 and H-12 cited; NIFTY50 and Q3 rose; closed on 2026-11-20; 3MINDIA") == []
    assert values("from 12 - 5 sessions") == [("12", D("12")), ("5", D("5"))]  # a spaced dash is no sign


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("₹1,234.50 lost", True),  # no sign written: either sign grounds it
        ("-₹1,234.50", True),
        ("+₹1,234.50", False),  # a sign written must match
        ("₹1,234.5", True),  # one decimal: 1234.50 rounds to it
        ("₹1,235", True),  # within half a rupee of 1234.50
        ("₹1,236", False),
        ("₹98,765", True),
        ("1.2k", True),  # 1,150 to 1,250 holds 1234.50
        ("75%", True),  # the rate 0.7500
        ("75.1%", False),
        ("0.75", True),
        ("31.25%", True),  # the float ECE 0.3125
        ("₹9,999", False),
        ("42", True),  # a position's id is a figure of the hard part
        ("2026", False),  # a date is not a figure
    ],
)
def test_a_number_is_grounded_within_its_own_rounding(text: str, expected: bool) -> None:
    assert grounded(text) is expected


def test_each_ungrounded_number_is_named_where_it_was_cited() -> None:
    narrative = {
        "what_worked": ["RELIANCE made ₹1,500.00 (position 42)."],
        "what_failed": ["The net was -₹1,234.50, and fees ate ₹777.77.", "Inaction beat 3 of 4 (75%)."],
        "hindsight": "Selling at ₹2,000 would have kept 90% of it.",
        "proposals": [{"text": "Cut size by 40% after 2 losses.", "factor": "risk", "heuristic": "H-7"}],
        "confidence": 0.4,
    }

    assert ungrounded(narrative, HARD) == [
        {"number": "₹777.77", "where": "what_failed[0]"},
        {"number": "₹2,000", "where": "hindsight"},
        {"number": "90%", "where": "hindsight"},
        {"number": "40%", "where": "proposals[0].text"},
        {"number": "2", "where": "proposals[0].text"},
    ]


def test_the_hard_parts_figures_are_every_number_at_any_depth() -> None:
    figures = hard_figures({"a": [1, {"b": "2.50", "c": 0.25, "d": True, "e": "LONG", "f": None}], "g": "-3"})

    assert figures.values == (D("-3"), D("0.25"), D("1"), D("2.50"))


money = st.decimals(min_value=D("-10000000"), max_value=D("10000000"), places=2, allow_nan=False)


@given(amount=money, places=st.integers(min_value=0, max_value=2), grouped=st.booleans(), rupee=st.booleans())
def test_a_figure_quoted_at_any_rounding_and_grouping_is_grounded(
    amount: Decimal, places: int, grouped: bool, rupee: bool
) -> None:
    shown = amount.quantize(D(1).scaleb(-places), rounding=ROUND_HALF_UP)
    text = f"{abs(shown):,.{places}f}" if grouped else f"{abs(shown):.{places}f}"
    sign = "-" if shown < 0 else ""
    quoted = f"{sign}{'₹' if rupee else ''}{text}"

    assert grounded(quoted, {"net": f"{amount:.2f}"}), quoted


@given(amount=money, offset=st.decimals(min_value=D("0.01"), max_value=D("1000"), places=2), up=st.booleans())
def test_a_figure_off_by_more_than_its_rounding_is_flagged(amount: Decimal, offset: Decimal, up: bool) -> None:
    invented = amount + offset if up else amount - offset
    quoted = f"{invented:+.2f}"  # signed, to the paisa: only the exact figure grounds it

    assert not grounded(quoted, {"net": f"{amount:.2f}"}), quoted
