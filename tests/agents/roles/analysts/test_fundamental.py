"""The fundamental analyst's offline rules: valuation, growth and margins read from the ratios."""

from __future__ import annotations

from agents.roles.analysts import analyst_request
from tests.agents.roles.builders import FUNDAMENTALS, make_bundle, note


def test_cheap_growing_high_margin_fundamentals_are_bullish() -> None:
    result = note(analyst_request("fundamental", make_bundle(fundamentals=FUNDAMENTALS)))
    assert result.stance > 0.4
    assert set(result.subscores) == {"valuation", "growth", "margin"}
    assert "P/E 12.50" in result.evidence and "revenue growth +14.50%" in result.evidence


def test_rich_shrinking_thin_margin_fundamentals_are_bearish() -> None:
    rich = FUNDAMENTALS.model_copy(
        update={"pe": 55.0, "pb": 9.0, "ev_ebitda": 32.0, "revenue_growth_pct": -4.0, "net_margin_pct": 2.5}
    )
    result = note(analyst_request("fundamental", make_bundle(fundamentals=rich)))
    assert result.stance < -0.4
