"""The fundamental analyst: valuation, growth and margin quality from the reported ratios only.

Without a fundamentals source it abstains: no multiple is given, and none is invented.
"""

from __future__ import annotations

from agents.domain.hygiene import neutralise
from agents.domain.llm import ModelRequest
from agents.roles._base import Evidence, base_evidence, build_request, fmt, header, pairs, signed
from agents.roles.analysts.note import (
    AnalystNote,
    Factor,
    Playbook,
    abstain,
    cite_playbook,
    empty_note,
    macro_evidence,
    macro_section,
    note_from_factors,
    task_line,
)
from vocabulary.features import FeatureBundle

JOB = (
    "You are the Fundamental Analyst. Judge valuation, growth and margin quality from the reported "
    "ratios only; never fabricate a multiple."
)


# --- the prompt ----------------------------------------------------------------------------------


def fundamental_request(bundle: FeatureBundle, *, memory_block: str = "", playbook: Playbook = ()) -> ModelRequest:
    fundamentals = bundle.fundamentals.model_dump(mode="json")
    macro = macro_evidence(bundle)
    evidence = {**base_evidence(bundle), "fundamentals": fundamentals, "macro": macro}
    shown = {**fundamentals, "source": neutralise(str(fundamentals["source"])) if fundamentals["source"] else None}
    sections = [
        header(bundle),
        f"fundamentals: {pairs(shown)}",
        macro_section(macro),
        task_line("fundamental", bundle.symbol, "Judge valuation, growth and margins from these ratios only."),
    ]
    return build_request(
        "fundamental", JOB, bundle.symbol, AnalystNote, sections, evidence, memory_block=memory_block, playbook=playbook
    )


# --- code's abstention ---------------------------------------------------------------------------


def fundamental_abstention(bundle: FeatureBundle) -> AnalystNote | None:
    if bundle.fundamentals.available:
        return None
    return abstain(
        "fundamental",
        bundle.symbol,
        "Abstaining: no fundamentals source is wired, so no multiple is given and none is invented.",
        ["fundamentals available=false"],
    )


# --- the offline rules ---------------------------------------------------------------------------

FUNDAMENTAL_WEIGHTS: dict[str, float] = {"valuation": 0.4, "growth": 0.35, "margin": 0.25}


def _pe_score(pe: float) -> float:
    # A sector-agnostic band: under 15 is cheap, 15-30 fair, over 40 rich; a loss (P/E ≤ 0) is a minus.
    if pe <= 0:
        return -0.5
    if pe < 15:
        return 0.6
    if pe <= 30:
        return 0.0
    if pe <= 40:
        return -0.3
    return -0.6


def _valuation(data: Evidence) -> Factor | None:
    readings: list[tuple[float, str]] = []
    if data.get("pe") is not None:
        readings.append((_pe_score(data["pe"]), f"P/E {fmt(data['pe'])}"))
    if data.get("pb") is not None:
        pb = data["pb"]
        readings.append((0.3 if pb < 1.5 else -0.3 if pb > 6 else 0.0, f"P/B {fmt(pb)}"))
    if data.get("ev_ebitda") is not None:
        multiple = data["ev_ebitda"]
        readings.append((0.4 if 0 < multiple < 10 else -0.4 if multiple > 25 else 0.0, f"EV/EBITDA {fmt(multiple)}"))
    if not readings:
        return None
    score = sum(value for value, _ in readings) / len(readings)
    label = "cheap" if score > 0.1 else "rich" if score < -0.1 else "fair"
    cited = tuple(text for _, text in readings)
    return Factor(
        "valuation", score, FUNDAMENTAL_WEIGHTS["valuation"], f"Valuation looks {label}: {', '.join(cited)}", cited
    )


def _growth(data: Evidence) -> Factor | None:
    growth = data.get("revenue_growth_pct")
    if growth is None:
        return None
    score = 0.6 if growth > 10 else 0.2 if growth >= 0 else -0.6
    label = "strong" if growth > 10 else "modest" if growth >= 0 else "shrinking"
    cited = f"revenue growth {signed(growth)}%"
    return Factor("growth", score, FUNDAMENTAL_WEIGHTS["growth"], f"Growth is {label}: {cited}", (cited,))


def _margin(data: Evidence) -> Factor | None:
    margin = data.get("net_margin_pct")
    if margin is None:
        return None
    score = 0.5 if margin > 15 else 0.1 if margin >= 5 else -0.4
    label = "high" if margin > 15 else "middling" if margin >= 5 else "thin"
    cited = f"net margin {fmt(margin)}%"
    return Factor("margin", score, FUNDAMENTAL_WEIGHTS["margin"], f"Margins are {label}: {cited}", (cited,))


def fundamental_note(symbol: str, evidence: Evidence) -> AnalystNote:
    """Valuation, growth and margin as weighted factors; confidence capped lower than the technical's."""
    data = evidence["fundamentals"]
    if not data.get("available"):
        return empty_note("fundamental", symbol, "No fundamentals source is wired.", ["available=false"])
    factors = [factor for factor in (_valuation(data), _growth(data), _margin(data)) if factor]
    if not factors:
        return empty_note("fundamental", symbol, "The fundamentals source gave no ratios.", ["available=true"])
    note = note_from_factors(
        "fundamental", symbol, factors, FUNDAMENTAL_WEIGHTS, label="Fundamental", time_horizon="quarters", cap=0.75
    )
    return cite_playbook(note, evidence)
