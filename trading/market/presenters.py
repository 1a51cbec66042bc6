"""Turns a FeatureBundle into rows a person can scan. Formatting only; no figures are computed here.

A run's presentation (its notes, debate, thesis and risk) is ``trading.pipeline.presenters``."""

from __future__ import annotations

from dataclasses import dataclass

from vocabulary.features import FeatureBundle, TechnicalFeatures

NOT_ENOUGH = "n/a"


@dataclass(frozen=True)
class Row:
    label: str
    value: str
    tone: str = ""  # "up", "down" or "" for colouring only


def _num(value: float | None, digits: int = 2) -> str:
    return NOT_ENOUGH if value is None else f"{value:,.{digits}f}"


def _pct(value: float | None, digits: int = 2) -> str:
    return NOT_ENOUGH if value is None else f"{value:+.{digits}f}%"


def _tone(value: float | None) -> str:
    if value is None or value == 0:
        return ""
    return "up" if value > 0 else "down"


def technical_sections(t: TechnicalFeatures) -> list[tuple[str, list[Row]]]:
    above = lambda level: "" if level is None else ("up" if t.last_close > level else "down")  # noqa: E731
    return [
        (
            "Price",
            [
                Row("Last close", _num(t.last_close)),
                Row("Previous close", _num(t.prev_close)),
                Row("Gap at open", _pct(t.gap_pct), _tone(t.gap_pct)),
                Row(
                    "Volume vs 20-day average",
                    NOT_ENOUGH if t.volume_vs_avg is None else f"{t.volume_vs_avg:.2f}×",
                ),
            ],
        ),
        (
            "Trend",
            [
                Row("SMA 20", _num(t.sma_20), above(t.sma_20)),
                Row("SMA 50", _num(t.sma_50), above(t.sma_50)),
                Row("SMA 200", _num(t.sma_200), above(t.sma_200)),
                Row("EMA 20", _num(t.ema_20), above(t.ema_20)),
            ],
        ),
        (
            "Momentum",
            [
                Row("RSI 14", _num(t.rsi_14, 1)),
                Row("MACD line", _num(t.macd_line, 3), _tone(t.macd_line)),
                Row("MACD signal", _num(t.macd_signal, 3)),
                Row("MACD histogram", _num(t.macd_hist, 3), _tone(t.macd_hist)),
            ],
        ),
        (
            "Volatility",
            [
                Row("ATR 14", _num(t.atr_14)),
                Row("Bollinger upper", _num(t.bb_upper)),
                Row("Bollinger middle", _num(t.bb_middle)),
                Row("Bollinger lower", _num(t.bb_lower)),
            ],
        ),
        (
            "Levels",
            [
                Row("Swing high (20)", _num(t.swing_high)),
                Row("Swing low (20)", _num(t.swing_low)),
                Row(
                    "Support",
                    f"{_num(t.support)} ({_pct(t.support_distance_pct)} away)" if t.support else NOT_ENOUGH,
                ),
                Row(
                    "Resistance",
                    f"{_num(t.resistance)} ({_pct(t.resistance_distance_pct)} away)" if t.resistance else NOT_ENOUGH,
                ),
            ],
        ),
    ]


def bundle_context(bundle: FeatureBundle) -> dict:
    return {"technical_sections": technical_sections(bundle.technical)}
