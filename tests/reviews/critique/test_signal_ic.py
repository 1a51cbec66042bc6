"""Rank ICs by hand: Spearman's correlation with ties, forward returns that never look past the
last bar, and the signals read from a stored feature bundle. Pure; no database."""

from __future__ import annotations

import datetime as dt
import math

import pytest

from reviews.domain.signal_ic import (
    CITATION_FAMILY,
    FAMILIES,
    READ_BLOCKS,
    READ_FIELDS,
    SIGNALS,
    Observation,
    average_ranks,
    forward_returns,
    observations,
    rank_ics,
    signal_readings,
    spearman,
)

DAY = dt.date(2026, 1, 5)


def _days(n: int) -> list[dt.date]:
    return [DAY + dt.timedelta(days=i) for i in range(n)]


def test_average_ranks_share_the_mean_of_the_ranks_a_tie_spans():
    assert average_ranks([10, 20, 20, 30]) == [1, 2.5, 2.5, 4]
    assert average_ranks([3, 1, 2, 2, 5, 4]) == [4, 1, 2.5, 2.5, 6, 5]
    assert average_ranks([7, 7, 7]) == [2, 2, 2]
    assert average_ranks([]) == []


def test_spearman_without_ties_is_one_minus_six_sum_d_squared_over_n_n2_minus_1():
    # d = (0, -1, 1, 0): 1 - 6 * 2 / (4 * 15) = 0.8
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert spearman([1, 2, 3, 4], [40, 30, 20, 10]) == pytest.approx(-1.0)


def test_spearman_with_ties_in_one_side_by_hand():
    # ranks of y: [1, 2, 3.5, 5, 3.5]; dx = (-2, -1, 0, 1, 2), dy = (-2, -1, 0.5, 2, 0.5)
    # covariance 8; sum dx^2 = 10, sum dy^2 = 9.5: 8 / sqrt(95)
    assert spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(8 / math.sqrt(95))
    assert spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(0.8207826816681233)


def test_spearman_with_ties_on_both_sides_by_hand():
    # rx = [4, 1, 2.5, 2.5, 6, 5], ry = [1.5, 3.5, 3.5, 5, 1.5, 6]
    # covariance -3.75; sum dx^2 = 17, sum dy^2 = 16.5
    rho = spearman([3, 1, 2, 2, 5, 4], [10, 20, 20, 30, 10, 40])
    assert rho == pytest.approx(-3.75 / math.sqrt(17 * 16.5))
    assert rho == pytest.approx(-0.2239055377599495)


def test_spearman_agrees_with_scipy_on_a_tied_sample():
    stats = pytest.importorskip("scipy.stats")
    xs = [0.1, 0.4, 0.4, -0.2, 0.9, 0.1, 0.3, 0.3, 0.3, -0.5]
    ys = [1.0, -2.0, 0.5, 0.5, 3.0, 1.0, -1.0, 2.0, 0.0, -3.0]
    assert spearman(xs, ys) == pytest.approx(stats.spearmanr(xs, ys).statistic)


def test_spearman_is_none_for_a_constant_side_or_too_few_pairs():
    assert spearman([1, 1, 1, 1], [1, 2, 3, 4]) is None
    assert spearman([1, 2, 3, 4], [5, 5, 5, 5]) is None
    assert spearman([1], [2]) is None
    assert spearman([1, 2, 3], [1, 2, 3], min_pairs=8) is None


def test_spearman_refuses_unpaired_values():
    with pytest.raises(ValueError, match="pairs"):
        spearman([1, 2, 3], [1, 2])


def test_forward_returns_exist_only_where_the_end_bar_does():
    days = _days(5)
    closes = list(zip(days, [100.0, 110.0, 99.0, 121.0, 100.0], strict=True))

    returns = forward_returns(closes, 2)

    assert set(returns) == set(days[:3])  # day 3 and 4 have no bar two sessions on
    assert returns[days[0]] == pytest.approx(-1.0)  # 100 -> 99
    assert returns[days[1]] == pytest.approx(10.0)  # 110 -> 121
    with pytest.raises(ValueError, match="horizon"):
        forward_returns(closes, 0)


def test_forward_returns_sort_the_closes_first():
    days = _days(3)
    assert forward_returns([(days[2], 120.0), (days[0], 100.0), (days[1], 90.0)], 1) == {
        days[0]: pytest.approx(-10.0),
        days[1]: pytest.approx(100 * (120 / 90 - 1)),
    }


def test_signal_readings_read_what_the_bundle_has_and_skip_what_it_lacks():
    bundle = {
        "technical": {
            "last_close": 200.0,
            "atr_14": 4.0,
            "rsi_14": 61.5,
            "sma_50": 190.0,
            "bb_upper": 210.0,
            "bb_middle": 200.0,
            "bb_lower": 190.0,
            "macd_hist": None,
        },
        "fundamentals": {"available": True, "pe": 25.0},
        "news": {"net_sentiment": 0.2},
    }

    readings = signal_readings(bundle)

    assert readings["atr_pct"] == pytest.approx(2.0)
    assert readings["close_vs_sma50"] == pytest.approx(5.0)
    assert readings["rsi_14"] == 61.5
    assert readings["bollinger_position"] == pytest.approx(0.0)
    assert readings["earnings_yield"] == pytest.approx(4.0)
    assert readings["news_sentiment"] == 0.2
    assert "macd_hist_pct" not in readings and "forecast_move_pct" not in readings
    assert signal_readings({}) == {}
    assert signal_readings({"technical": "not a block", "forecast": None}) == {}


class _Seen(dict):
    """A bundle block that notes each key read from it."""

    def __init__(self, path: str, seen: set[str], values: dict) -> None:
        super().__init__(values)
        self.path, self.seen = path, seen

    def get(self, key, default=None):
        self.seen.add(f"{self.path}{key}")
        return super().get(key, default)

    def __getitem__(self, key):
        self.seen.add(f"{self.path}{key}")
        return super().__getitem__(key)


def test_the_signals_read_only_the_parts_of_a_bundle_a_critique_loads():
    # A critique loads of each stored bundle only READ_BLOCKS whole and READ_FIELDS: a signal that
    # read anything else would silently read nothing there.
    seen: set[str] = set()
    blocks = {"technical", "fundamentals", "sentiment", "forecast", "news", "macro", "warnings"}
    number_fields = [*{"last_close", "atr_14", "rsi_14", "sma_20", "sma_50", "sma_200", "ema_20", "macd_hist"},
                     "bb_upper", "bb_middle", "bb_lower", "pe", "revenue_growth_pct", "net_margin_pct",
                     "expected_move_pct", "net_sentiment", "news_sentiment", "volume_vs_avg"]  # fmt: skip
    bundle = _Seen("", seen, {name: _Seen(f"{name}.", seen, dict.fromkeys(number_fields, 1.5)) for name in blocks})

    assert signal_readings(bundle)  # it read something
    whole = {f"{block}." for block in READ_BLOCKS}
    fields = {f"{block}.{name}" for block, name in READ_FIELDS}
    read = {path for path in seen if "." in path}
    assert {path for path in read if not path.startswith(tuple(whole))} <= fields
    assert {path for path in seen if "." not in path} <= set(READ_BLOCKS) | {block for block, _ in READ_FIELDS}


def test_every_signal_and_cited_indicator_has_a_known_family():
    assert {spec.family for spec in SIGNALS} == set(FAMILIES)
    assert set(CITATION_FAMILY.values()) <= set(FAMILIES)
    assert len({spec.name for spec in SIGNALS}) == len(SIGNALS)


def test_observations_pair_bundles_with_forward_returns_and_drop_days_without_one():
    days = _days(3)
    bundles = {("AAA", day): {"technical": {"rsi_14": 40.0 + i}} for i, day in enumerate(days)}
    returns = {"AAA": {days[0]: 1.5, days[1]: -0.5}}

    paired = observations(bundles, returns)

    assert paired == [
        Observation("AAA", days[0], {"rsi_14": 40.0}, 1.5),
        Observation("AAA", days[1], {"rsi_14": 41.0}, -0.5),
    ]


def test_rank_ics_rank_each_signal_over_the_observations_carrying_it():
    rows = [
        Observation("AAA", day, {"rsi_14": float(i), "volume_vs_avg": float(-i)}, float(i) * 2)
        for i, day in enumerate(_days(10))
    ]

    results = {r.signal: r for r in rank_ics(rows)}

    assert results["rsi_14"].ic == 1.0 and results["rsi_14"].observations == 10
    assert results["volume_vs_avg"].ic == -1.0
    assert results["atr_pct"].ic is None and results["atr_pct"].observations == 0
    assert results["rsi_14"].above(0.03) and results["volume_vs_avg"].above(0.03)
    assert not results["atr_pct"].above(0.03)


def test_rank_ics_give_none_under_the_minimum_of_pairs():
    rows = [Observation("AAA", day, {"rsi_14": float(i)}, float(i)) for i, day in enumerate(_days(5))]
    assert {r.signal: r.ic for r in rank_ics(rows)}["rsi_14"] is None
    assert {r.signal: r.ic for r in rank_ics(rows, min_pairs=5)}["rsi_14"] == 1.0
