"""Money is shown in its own currency, to the paisa/cent, grouped the way its readers expect."""

from __future__ import annotations

from decimal import Decimal

import pytest

from trading.book.domain.risk import format_rupees
from vocabulary.money import currency_symbol, format_money


@pytest.mark.parametrize(
    ("amount", "currency", "shown"),
    [
        ("120000", "INR", "₹1,20,000.00"),
        ("12345678.9", "INR", "₹1,23,45,678.90"),
        ("-1200", "INR", "-₹1,200.00"),
        ("999.995", "INR", "₹1,000.00"),  # half-up at the paisa, not banker's rounding
        ("0.125", "INR", "₹0.13"),
        ("1200.5", "USD", "$1,200.50"),
        ("1234567", "USD", "$1,234,567.00"),  # never grouped in lakhs
        ("-42.1", "USD", "-$42.10"),
        ("1000", "EUR", "€1,000.00"),
        ("1500", "JPY", "¥1,500.00"),  # still two decimals, like every other figure
        ("-0.001", "INR", "₹0.00"),  # no negative zero
    ],
)
def test_it_formats_an_amount_in_its_currency(amount, currency, shown):
    assert format_money(Decimal(amount), currency) == shown


def test_it_defaults_to_rupees_and_reads_a_lower_case_code():
    assert format_money(Decimal("50000")) == "₹50,000.00"
    assert format_money(Decimal("5"), "usd") == "$5.00"


def test_it_lets_the_caller_choose_the_locale():
    assert format_money(Decimal("1234567"), "USD", locale="en_IN") == "$12,34,567.00"


@pytest.mark.parametrize("amount", ["0", "1", "999.99", "100000", "-1200", "12345678.905", "-0.004"])
def test_it_agrees_with_format_rupees_on_rupees(amount):
    assert format_money(Decimal(amount), "INR") == format_rupees(Decimal(amount))


def test_it_gives_the_symbol_it_prints_for_an_axis_label():
    assert (currency_symbol("INR"), currency_symbol("USD"), currency_symbol()) == ("₹", "$", "₹")
