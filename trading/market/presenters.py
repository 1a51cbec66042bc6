"""Turns a FeatureBundle into rows a person can scan. Formatting only; no figures are computed here."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from vocabulary.features import FeatureBundle, TechnicalFeatures
from vocabulary.money import format_money

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


ANALYST_ORDER = ("news", "sentiment", "technical", "fundamental")


def run_outputs(run) -> dict[str, dict]:
    return {stage.stage: stage.output for stage in run.stages.all() if stage.status == "done"}


def _note_line(role: str, note: dict | None, failure: str | None) -> str:
    if failure:
        return f"  {role:<12} FAILED  {failure}"
    if note is None:
        return f"  {role:<12} —"
    tag = " (abstained)" if note.get("abstained") else ""
    return f"  {role:<12} stance {note['stance']:+.2f}  confidence {note['confidence']:.2f}{tag}  {note['summary']}"


def run_summary_lines(run, totals: dict) -> list[str]:
    """The plain-text summary printed by ``manage.py run_pipeline``."""
    outputs = run_outputs(run)
    lines = [f"Run {run.pk}: {run.instrument.symbol} as of {run.as_of} via {run.provider} → {run.status.upper()}"]
    if run.failure_reason:
        lines.append(f"  reason: {run.failure_reason}")
    lines.append("Stages: " + ", ".join(f"{s.stage}={s.status}" for s in run.stages.all()))
    analysts = outputs.get("analysts")
    if analysts:
        lines.append("Analysts:")
        for role in ANALYST_ORDER:
            lines.append(_note_line(role, analysts["notes"].get(role), analysts["failures"].get(role)))
    debate = outputs.get("debate")
    if debate:
        result, cal = debate["result"], debate["calibration"]
        lines.append(
            f"Debate: {result['winner']} conviction {result['conviction']:.2f} "
            f"(proposed {cal['proposed']:.2f}, {cal['opposing']}/{cal['side_taking']} side-taking analysts opposed)"
        )
        lines.append(f"  rationale: {result['manager_rationale']}")
    trader = outputs.get("trader")
    if trader:
        t = trader["thesis"]
        lines.append(
            f"Thesis: {t['direction']} entry {t['entry']:.2f} stop {t['stop']:.2f} target {t['target']:.2f} "
            f"horizon {t['horizon_sessions']} sessions (levels: {t['levels_source']})"
        )
    risk = outputs.get("risk")
    if risk:
        decision = risk["decision"]
        verdict = "APPROVED" if decision["approved"] else "REJECTED"
        lines.append(
            f"Risk: {verdict} quantity {decision['quantity']} risk {decision['risk_amount']} "
            f"notional {decision['notional']}"
        )
        for check in decision["checks"]:
            lines.append(f"  {'✓' if check['passed'] else '✗'} {check['name']}: {check['detail']}")
    lines.append(
        f"Model calls: {totals['calls']}, tokens in/out {totals['input_tokens']:,}/{totals['output_tokens']:,}, "
        f"cost {totals['cost']}"
    )
    return lines


def _risk_display(decision: dict | None, currency: str) -> dict | None:
    """Risk and notional are quantity x price, so they are in the instrument's currency."""
    if decision is None:
        return None
    return {
        **decision,
        "risk_amount": format_money(Decimal(decision["risk_amount"]), currency),
        "notional": format_money(Decimal(decision["notional"]), currency),
    }


def run_context(run, totals: dict) -> dict:
    """Everything the run page shows, read from the stored stage outputs."""
    outputs = run_outputs(run)
    stages = {s.stage: s for s in run.stages.all()}
    analysts = outputs.get("analysts", {})
    notes = []
    for role in ANALYST_ORDER:
        note = analysts.get("notes", {}).get(role)
        notes.append(
            {
                "role": role,
                "note": note,
                "failure": analysts.get("failures", {}).get(role),
                "stance_pct": None if note is None else round((note["stance"] + 1) * 50, 1),
            }
        )
    from trading.models.pipeline import STAGES

    return {
        "stage_rows": [(name, stages.get(name)) for name in STAGES],
        "notes": notes if analysts else [],
        "quorum": analysts.get("quorum"),
        "memory_block": outputs.get("context", {}).get("memory_block", ""),
        "debate": outputs.get("debate"),
        "trader": outputs.get("trader"),
        "risk": _risk_display(outputs.get("risk", {}).get("decision"), run.instrument.currency),
        "totals": totals,
    }


def interpretation_hints(context: dict, thesis) -> list[str]:
    """The quick interpretation guide, shown only where its pattern occurs."""
    hints = []
    notes = [n["note"] for n in context.get("notes", []) if n.get("note")]
    side_taking = [n for n in notes if not n.get("abstained") and abs(n["stance"]) > 0.05]
    if side_taking and len({n["stance"] > 0 for n in side_taking}) > 1:
        hints.append(
            "Mixed stances: genuine uncertainty. Conviction is already calibrated down; read the manager's "
            "rationale and the falsifiers."
        )
    abstaining = [n["role"] for n in notes if n.get("abstained")]
    if abstaining:
        hints.append(
            f"{' and '.join(r.capitalize() for r in abstaining)} abstaining: no real data for that factor. The "
            "thesis rests on the other evidence; not a red flag by itself."
        )
    news = next((n for n in notes if n["role"] == "news" and not n.get("abstained")), None)
    if news and news["stance"] <= -0.5 and news["confidence"] >= 0.6:
        hints.append("News is confidently bearish: event-driven risk, the thesis may be fighting headwinds.")
    conviction = float(thesis.conviction)
    if not thesis.risk_approved:
        hints.append("Risk rejected: a hard stop. The thesis breaks a portfolio rule; do not override.")
    elif conviction > 0.75:
        hints.append("High conviction and risk approved: the cleanest signal (the trader used the deep model).")
    if conviction < 0.45:
        hints.append("Low conviction: the debate was close or the panel diverged. Think twice.")
    hints.append("Stop and target come from ATR (stop ≈ 2×ATR, target 2R): that is the volatility talking.")
    return hints
