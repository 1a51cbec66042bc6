"""Research reads history in the reading day's share units: a split is not a crash to a research
backtest, nor to an attached signal's reading."""

from __future__ import annotations

import pytest

from research.data import load_bars
from tests.trading.test_corporate_actions import split_pair  # noqa: F401  (the fixture)
from trading.market.research_signals import bar_series

pytestmark = pytest.mark.django_db


def test_a_research_session_reads_a_split_series_as_the_adjusted_one(split_pair):  # noqa: F811
    adjusted, printed, _ex_date = split_pair

    loaded = load_bars([adjusted.symbol, printed.symbol])

    # Equal to the stored precision (a price divided by five keeps four places).
    assert loaded[printed.symbol].close == pytest.approx(loaded[adjusted.symbol].close, abs=1e-4)
    assert loaded[printed.symbol].volume == pytest.approx(loaded[adjusted.symbol].volume, rel=1e-9)


def test_a_signal_reading_sees_the_split_only_from_its_ex_date(split_pair):  # noqa: F811
    adjusted, printed, ex_date = split_pair
    before = printed.bars.filter(date__lt=ex_date).latest("date").date

    after_split = bar_series(printed, as_of=ex_date, limit=300)
    day_before = bar_series(printed, as_of=before, limit=300)

    assert [row[4] for row in after_split.rows] == [
        row[4] for row in bar_series(adjusted, as_of=ex_date, limit=300).rows
    ]
    # The day before the ex-date nobody knew of the split: the prices read as printed.
    assert day_before.rows[-1][4] == printed.bars.get(date=before).close
