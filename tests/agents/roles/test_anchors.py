"""The anchors are the bundle's deterministic levels; the forecast keys only when there is one."""

from __future__ import annotations

from agents.roles import anchors_from_bundle
from tests.agents.roles.builders import make_bundle


def test_anchors_are_the_deterministic_levels_of_the_bundle() -> None:
    anchors = anchors_from_bundle(make_bundle())
    assert anchors["last_price"] == 750.0 and anchors["atr_14"] == 12.5
    assert (anchors["support"], anchors["resistance"]) == (735.0, 790.0)
    assert anchors["forecast_expected_move_pct"] == 1.5
    assert "forecast_expected_move_pct" not in anchors_from_bundle(make_bundle(expected_move_pct=None))
