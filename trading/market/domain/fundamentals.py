"""Fundamental ratios, passed through only when a real snapshot exists.

No fundamentals source is wired by default, so "unavailable" is the common answer and the
fundamental analyst abstains rather than guessing.
"""

from __future__ import annotations

from vocabulary.features import FundamentalFeatures, FundamentalsInput

__all__ = ["RATIO_FIELDS", "fundamental_features"]

RATIO_FIELDS: tuple[str, ...] = ("pe", "pb", "ev_ebitda", "revenue_growth_pct", "net_margin_pct")


def _has_any_ratio(snapshot: FundamentalsInput) -> bool:
    return any(getattr(snapshot, field) is not None for field in RATIO_FIELDS)


def fundamental_features(snapshot: FundamentalsInput | None) -> FundamentalFeatures:
    """The snapshot's ratios, or ``available=False`` when there is no snapshot or it holds no ratio."""
    if snapshot is None or not _has_any_ratio(snapshot):
        return FundamentalFeatures(available=False)
    return FundamentalFeatures(
        available=True,
        as_of=snapshot.as_of,
        source=snapshot.source,
        **{field: getattr(snapshot, field) for field in RATIO_FIELDS},
    )
