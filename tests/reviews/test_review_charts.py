"""The attribution waterfall stays readable with no component, a dozen, and fifty: plain data in,
a JSON-ready Plotly figure out (no database)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from reviews.charts import MIN_HEIGHT, ROW_HEIGHT, attribution_waterfall
from tests.factories.reviews import hard_part


def trace_of(figure: dict) -> dict:
    (trace,) = figure["data"]
    return trace


def test_a_reports_rows_are_drawn_in_order_with_the_net_as_a_total():
    rows = hard_part()["waterfall"]

    figure = attribution_waterfall(rows, currency="INR")

    trace = trace_of(figure)
    assert trace["type"] == "waterfall" and trace["orientation"] == "h"
    assert trace["y"] == [row["label"] for row in rows]
    assert trace["measure"] == ["relative"] * (len(rows) - 1) + ["total"]
    assert trace["text"][0] == "₹18,450.00" and trace["text"][-1] == "₹13,826.67"
    assert figure["layout"]["yaxis"]["autorange"] == "reversed"  # read top to bottom
    json.dumps(figure)  # plain JSON for json_script


def test_the_money_axis_reads_in_whole_rupees_without_si_suffixes():
    axis = attribution_waterfall(hard_part()["waterfall"])["layout"]["xaxis"]

    assert axis["tickprefix"] == "₹" and axis["tickformat"] == ",.0f" and axis["exponentformat"] == "none"


def test_no_component_draws_a_zero_net_with_a_note_rather_than_an_empty_frame():
    figure = attribution_waterfall([], currency="INR")

    trace = trace_of(figure)
    assert trace["y"] == ["Net result"] and trace["x"] == [0.0] and trace["text"] == ["₹0.00"]
    assert figure["layout"]["xaxis"]["range"] == [-1, 1]
    assert figure["layout"]["annotations"][0]["text"] == "nothing to attribute in this period"
    assert figure["layout"]["height"] == MIN_HEIGHT


def test_a_quiet_period_of_zero_rows_keeps_its_layout_and_says_nothing_happened():
    figure = attribution_waterfall(hard_part(quiet=True)["waterfall"])

    rows = trace_of(figure)["y"]
    assert len(rows) == 14 and "Dividends" in rows  # every line of the attribution, dividends included
    assert figure["layout"]["annotations"][0]["text"] == "nothing to attribute in this period"


def test_many_components_grow_the_chart_instead_of_squeezing_the_rows():
    rows = [{"label": f"Charge line {n}", "amount": f"-{n}.25"} for n in range(1, 51)]

    figure = attribution_waterfall(rows, currency="USD")

    trace = trace_of(figure)
    assert len(trace["y"]) == 51 and trace["y"][-1] == "Net result"  # the net added when missing
    assert trace["text"][-1] == "-$1,287.50"
    assert figure["layout"]["height"] >= 51 * ROW_HEIGHT
    assert figure["layout"]["xaxis"]["tickprefix"] == "$"


def test_short_bars_carry_their_label_beside_them():
    trace = trace_of(
        attribution_waterfall([{"label": "Gains", "amount": "1000.00"}, {"label": "SEBI fee", "amount": "-0.30"}])
    )

    assert trace["textposition"] == ["inside", "outside", "inside"]


@pytest.mark.parametrize("amount", ["lots", "NaN", "Infinity"])
def test_an_amount_that_is_not_a_number_is_refused(amount):
    with pytest.raises(ValueError, match="waterfall amount"):
        attribution_waterfall([{"label": "Gains", "amount": amount}])


def test_decimals_are_accepted_as_well_as_strings():
    trace = trace_of(attribution_waterfall([{"label": "Gains", "amount": Decimal("12.5")}]))

    assert trace["x"] == [12.5, 12.5] and trace["text"] == ["₹12.50", "₹12.50"]


def test_a_short_bar_at_the_edge_of_the_plot_keeps_its_label_inside_not_over_the_row_names() -> None:
    from decimal import Decimal

    from reviews.charts import _text_positions

    # Losses take the running level far left; the small unrealised change then ends at the axis's
    # left edge, where a label beside it would sit on the row names. A small charge mid-way keeps
    # its label beside the bar.
    amounts = [Decimal("0"), Decimal("-6783.20"), Decimal("-201.55"), Decimal("-3000"), Decimal("-9984.75")]
    positions = _text_positions(amounts, [False, False, False, False, True])

    assert positions == ["outside", "inside", "outside", "inside", "inside"]
