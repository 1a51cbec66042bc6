"""The anchors: the deterministic levels the manager and the trader may cite.

Prices in a thesis are re-anchored by code from these afterwards; a model only quotes them. The
forecast keys are for the trader alone: the manager's request drops them.
"""

from __future__ import annotations

from collections.abc import Mapping

from vocabulary.features import FeatureBundle

FORECAST_ANCHOR_PREFIX = "forecast_"


def anchors_from_bundle(bundle: FeatureBundle) -> dict[str, float | int | None]:
    """The deterministic levels the manager and trader may cite (prices are re-anchored by code).
    The forecast keys are for the trader only; ``manager_request`` drops them."""
    technical = bundle.technical
    anchors: dict[str, float | int | None] = {
        "last_price": technical.last_close,
        "prev_close": technical.prev_close,
        "atr_14": technical.atr_14,
        "support": technical.support,
        "resistance": technical.resistance,
        "rsi_14": technical.rsi_14,
    }
    if bundle.forecast is not None:
        anchors["forecast_expected_move_pct"] = bundle.forecast.expected_move_pct
        anchors["forecast_low_move_pct"] = bundle.forecast.low_move_pct
        anchors["forecast_high_move_pct"] = bundle.forecast.high_move_pct
        anchors["forecast_horizon_sessions"] = bundle.forecast.horizon_sessions
    return anchors


def without_forecast_anchors(anchors: Mapping[str, float | int | None]) -> dict[str, float | int | None]:
    return {key: value for key, value in anchors.items() if not key.startswith(FORECAST_ANCHOR_PREFIX)}
