from __future__ import annotations

import datetime as dt

from trading.market.domain.fundamentals import fundamental_features
from vocabulary.features import FundamentalsInput

AS_OF = dt.date(2026, 10, 20)


def test_no_snapshot_means_unavailable() -> None:
    result = fundamental_features(None)
    assert result.available is False
    assert (result.as_of, result.source, result.pe) == (None, None, None)


def test_a_snapshot_without_any_ratio_means_unavailable() -> None:
    assert fundamental_features(FundamentalsInput(as_of=AS_OF, source="vendor")).available is False


def test_a_snapshot_with_ratios_is_passed_through() -> None:
    snapshot = FundamentalsInput(
        as_of=AS_OF,
        source="vendor",
        pe=24.5,
        pb=3.1,
        ev_ebitda=15.2,
        revenue_growth_pct=9.0,
        net_margin_pct=18.5,
    )
    result = fundamental_features(snapshot)
    assert result.available is True
    assert (result.as_of, result.source) == (AS_OF, "vendor")
    assert (result.pe, result.pb, result.ev_ebitda) == (24.5, 3.1, 15.2)
    assert (result.revenue_growth_pct, result.net_margin_pct) == (9.0, 18.5)


def test_one_ratio_is_enough_and_the_missing_ones_stay_empty() -> None:
    result = fundamental_features(FundamentalsInput(as_of=AS_OF, source="vendor", pb=2.4))
    assert result.available is True
    assert result.pb == 2.4
    assert result.ev_ebitda is None
