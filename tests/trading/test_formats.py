"""One number format everywhere: money and prices in their own currency (Indian grouping for
rupees), counts grouped, moves and distances in percent with their sign, and a support level below
the price reads as a move down to it."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.template import Context, Template
from django.urls import reverse

from trading.market import presenters
from trading.market.domain.technical import technical_features
from trading.market.selectors import bars_frame
from trading.models import Instrument
from vocabulary.numbers import format_count, format_number, format_signed_percent


def render(source: str, **context) -> str:
    return Template("{% load desk %}" + source).render(Context(context))


@pytest.mark.parametrize(
    ("amount", "currency", "expected"),
    [
        (Decimal("12345678.90"), "INR", "₹1,23,45,678.90"),
        (Decimal("-120000"), "INR", "-₹1,20,000.00"),
        (Decimal("1234.5"), "USD", "$1,234.50"),
        (Decimal("12345678.9"), "USD", "$12,345,678.90"),
        (Decimal("-0.001"), "INR", "₹0.00"),
        ("2.675", "INR", "₹2.68"),  # half-up, not the banker's half-even
    ],
)
def test_money_reads_in_its_own_currency_and_grouping(amount, currency, expected):
    assert render("{{ amount|money:currency }}", amount=amount, currency=currency) == expected


def test_a_dollar_instrument_shows_its_prices_in_dollars_and_a_rupee_one_in_rupees():
    dollar = Instrument(symbol="AAPL", exchange="NASDAQ", currency="USD")
    rupee = Instrument(symbol="RELIANCE", exchange="NSE", currency="INR")

    assert render("{{ p|price:i }}", p=Decimal("182.4"), i=dollar) == "$182.40"
    assert render("{{ p|price:i }}", p=Decimal("245678.4"), i=rupee) == "₹2,45,678.40"
    assert render("{{ p|price:i.currency }}", p=Decimal("182.4"), i=dollar) == "$182.40"
    assert render("{{ p|money:i }}", p=Decimal("182.4"), i=dollar) == "$182.40"


def test_a_missing_amount_is_blank_not_zero():
    assert render("{{ none|money:'INR' }}|{{ none|price:'USD' }}", none=None) == "|"


@pytest.mark.parametrize(
    ("source", "value", "expected"),
    [
        ("{{ v|count }}", 1234567, "1,234,567"),
        ("{{ v|count }}", 0, "0"),
        ("{{ v|count }}", None, "—"),
        ("{{ v|number:3 }}", 1234.56789, "1,234.568"),
        ("{{ v|number }}", -0.001, "0.00"),
        ("{{ v|pct }}", 12.345, "12.35%"),
        ("{{ v|pct:1 }}", "76.44", "76.4%"),
        ("{{ v|signed_pct }}", 0.876, "+0.88%"),
        ("{{ v|signed_pct }}", -1.2, "-1.20%"),
        ("{{ v|signed_pct }}", 0, "0.00%"),
        ("{{ v|signed_pct }}", -0.001, "0.00%"),  # rounds to zero: no sign
        ("{{ v|signed_pct:1 }}", 0.04, "0.0%"),
        ("{{ v|signed_pct }}", None, "—"),
        ("{{ v|signed_pct }}", "n/a", "—"),
        ("{{ v|model_cost }}", "0.012345", "$0.0123"),
        ("{{ v|model_cost }}", 12345, "$12,345.0000"),
        ("{{ v|model_cost:'INR' }}", "1.5", "₹1.5000"),
        ("{{ v|model_cost }}", None, "—"),
    ],
)
def test_counts_figures_and_percentages_read_alike(source, value, expected):
    assert render(source, v=value) == expected


def test_presenters_write_figures_with_the_same_words_as_the_filters():
    assert format_count(98765) == render("{{ v|count }}", v=98765) == "98,765"
    assert format_number(1.23456, 3) == render("{{ v|number:3 }}", v=1.23456)
    assert format_signed_percent(2.5) == render("{{ v|signed_pct }}", v=2.5) == "+2.50%"


def _features(instrument: Instrument):
    return technical_features(bars_frame(instrument, as_of=instrument.bars.order_by("-date")[0].date, limit=400))


def _row(sections, label: str) -> str:
    return next(row.value for _, rows in sections for row in rows if row.label == label)


def test_a_support_below_the_price_reads_as_a_move_down_and_a_resistance_above_as_a_move_up(
    instrument_with_bars,
):
    features = _features(instrument_with_bars)
    assert features.support is not None and features.resistance is not None
    assert features.support < features.last_close < features.resistance  # the usual case, computed from bars

    sections = presenters.technical_sections(features)

    support, resistance = _row(sections, "Support"), _row(sections, "Resistance")
    down_to_support = (features.support - features.last_close) / features.last_close * 100
    up_to_resistance = (features.resistance - features.last_close) / features.last_close * 100
    assert f"({format_signed_percent(down_to_support)} from the close)" in support
    assert "(-" in support and "(+" in resistance
    assert f"({format_signed_percent(up_to_resistance)} from the close)" in resistance
    assert "away" not in support


def test_the_level_rows_show_prices_in_the_instruments_currency(instrument_with_bars):
    features = _features(instrument_with_bars)

    in_dollars = presenters.technical_sections(features, currency="USD")
    in_rupees = presenters.technical_sections(features)

    assert _row(in_dollars, "Last close").startswith("$") and _row(in_dollars, "Support").startswith("$")
    assert _row(in_rupees, "Last close").startswith("₹") and _row(in_rupees, "ATR 14").startswith("₹")
    assert "₹" not in _row(in_rupees, "MACD line")  # an oscillator is not a price


def test_the_instrument_page_shows_the_support_below_the_price_with_a_minus(client, viewer, instrument_with_bars):
    client.force_login(viewer)
    features = _features(instrument_with_bars)
    down_to_support = (features.support - features.last_close) / features.last_close * 100

    body = client.get(reverse("instrument_detail", args=["RELIANCE"])).content.decode()

    assert f"{format_signed_percent(down_to_support)} from the close" in body
    assert format_signed_percent(down_to_support).startswith("-")


def test_the_instrument_list_signs_the_change_and_groups_the_bar_count(client, viewer, instrument_with_bars):
    client.force_login(viewer)
    last, previous = instrument_with_bars.bars.order_by("-date")[:2]
    change = (last.close - previous.close) / previous.close * 100

    body = client.get(reverse("instrument_list")).content.decode()

    assert format_signed_percent(change) in body
    assert (format_signed_percent(change)[0] == "+") == (change > Decimal("0.005"))
    assert render("{{ p|price:i }}", p=last.close, i=instrument_with_bars) in body
    assert f'<td class="num">{instrument_with_bars.bars.count():,}</td>' in body
