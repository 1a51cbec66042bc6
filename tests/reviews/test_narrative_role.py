"""The narrator's role on its own (no database): the offline rules read the digest of a hard part
and quote its figures verbatim; code caps the confidence and drops unknown heuristic codes."""

from __future__ import annotations

from typing import Any

from agents.roles.retrospective import (
    CONFIDENCE_CAPS,
    PlaybookProposal,
    RetrospectiveNarrative,
    digest,
    narrative_draft,
    narrative_request,
    settle,
)
from reviews.domain.grounding import ungrounded

ROW = {"opened_on": "2026-11-02", "unrealised_pnl": None, "direction": "LONG"}
HARD: dict[str, Any] = {
    "currency": "INR",
    "period": {"start": "2026-11-14", "end": "2026-11-20", "sessions": 5},
    "attribution": {
        "gains": "2400.00", "losses": "-1900.00", "slippage": "-35.50", "costs": {"stt": "-60.00"},
        "costs_total": "-60.00", "manual": "0.00", "unrealised": "120.00", "inference": "-0.36",
        "net": "524.14", "operational_cost": "-60.36", "risk_adjusted": "0.85",
    },
    "actions": {"entries": 3, "exits": 4, "holds": 47, "rejected": 1, "exits_by_reason": {"stop": 2, "target": 2}},
    "positions": [
        {**ROW, "id": 1, "symbol": "TCS", "closed_on": "2026-11-18", "realised_pnl": "1500.00",
         "exit_reason": "target", "vs_inaction": "1500.00", "regret": "0.00"},
        {**ROW, "id": 2, "symbol": "INFY", "closed_on": "2026-11-19", "realised_pnl": "-1200.00",
         "exit_reason": "stop", "vs_inaction": "-1200.00", "regret": "1650.25"},
        {**ROW, "id": 3, "symbol": "SBIN", "closed_on": "2026-11-19", "realised_pnl": "-300.00",
         "exit_reason": "stop", "vs_inaction": "-300.00", "regret": "80.00"},
        {**ROW, "id": 4, "symbol": "ITC", "closed_on": "2026-11-20", "realised_pnl": "400.00",
         "exit_reason": "target", "vs_inaction": "400.00", "regret": "10.00"},
    ],
    "inaction": {"positions": 4, "beaten_by_inaction": 3, "superiority": "0.7500"},
    "accuracy": {
        "analysts": [{"role": "technical", "calls": 6, "right": 4, "rate": "0.6667"}],
        "debate": {"calls": 4, "right": 2, "rate": "0.5000"},
        "levels": {"theses": 4, "target_hit": 2, "stop_hit": 2, "neither": 0, "hit_rate": "0.5000"},
        "forecast": {"resolved": 0, "inside": 0, "coverage": None},
    },
    "heuristics": [
        {"code": "H-3", "citations": 8, "total_pnl": "11200.00", "win_rate": "0.7500", "average_pnl": "1400.00",
         "recommendation": "KEEP"},
        {"code": "H-7", "citations": 3, "total_pnl": "-6300.00", "win_rate": "0.3333", "average_pnl": "-2100.00",
         "recommendation": "DEMOTE"},
        {"code": "H-12", "citations": 0, "total_pnl": "0.00", "win_rate": None, "average_pnl": None,
         "recommendation": "INSUFFICIENT_DATA"},
    ],
    "calibration": {"analyst_ece": 0.3125, "debate_ece": None, "samples": 40, "alarm": True, "threshold": 0.25,
                    "by_subject": {}},
    "effectiveness": {"net": "524.14", "risk_adjusted": "0.8500", "inaction_superiority": "0.7500", "score": "0.4"},
}  # fmt: skip
HARD["best_position"], HARD["worst_position"] = HARD["positions"][0], HARD["positions"][1]


def offline(hard: dict[str, Any], horizon: str = "weekly") -> RetrospectiveNarrative:
    request = narrative_request(horizon=horizon, hard=hard)
    return narrative_draft(request.symbol, request.evidence)


def test_the_offline_narrative_reads_the_figures_and_quotes_them_as_the_pages_write_them() -> None:
    narrative = offline(HARD)
    text = " ".join([*narrative.what_worked, *narrative.what_failed, narrative.hindsight])

    assert ungrounded(narrative.model_dump(mode="json"), HARD) == []
    assert "TCS LONG was the best position: ₹1,500.00" in text
    assert "INFY LONG was the worst position: -₹1,200.00" in text
    assert "inaction beat 3 of 4 closed positions (superiority 0.7500)" in text
    assert "H-3 (KEEP)" in text and "H-7 (DEMOTE)" in text
    assert "expected calibration error 0.3125" in text
    assert "INFY LONG gave back ₹1,650.25" in text
    codes = [proposal.heuristic for proposal in narrative.proposals]
    assert codes[0] == "H-7" and len(narrative.proposals) <= 3


def test_an_empty_period_still_gets_a_narrative() -> None:
    empty = {"attribution": {"net": "0.00"}, "positions": [], "heuristics": [], "inaction": {"positions": 0}}

    narrative = offline(empty)

    assert narrative.what_worked and narrative.what_failed and narrative.hindsight
    assert ungrounded(narrative.model_dump(mode="json"), empty) == []


def test_the_digest_keeps_the_largest_positions_and_the_cited_heuristics() -> None:
    many = {**HARD, "positions": [{**HARD["positions"][0], "id": i, "realised_pnl": f"{i}.00"} for i in range(40)]}
    many["lifecycle"] = {"path": ["1.00"] * 500, "regret": "3.00"}

    view = digest(many)

    assert [row["id"] for row in view["positions"]] == list(range(39, 29, -1))
    assert [row["code"] for row in view["heuristics"]] == ["H-3", "H-7"]
    assert view["lifecycle"] == {"regret": "3.00"}
    assert "by_subject" not in view["calibration"]


def test_code_caps_the_confidence_and_keeps_only_known_heuristic_codes() -> None:
    claimed = RetrospectiveNarrative(
        what_worked=["x"],
        what_failed=["y"],
        hindsight="z",
        proposals=[PlaybookProposal(text="a", heuristic="H-7"), PlaybookProposal(text="b", heuristic="H-99")],
        confidence=0.95,
    )

    settled = settle(claimed, horizon="daily", known_codes={"H-7"})

    assert settled.confidence == CONFIDENCE_CAPS["daily"] == 0.4
    assert [proposal.heuristic for proposal in settled.proposals] == ["H-7", None]
    assert settle(claimed, horizon="epoch", known_codes=()).confidence == 0.8
    assert settle(claimed.model_copy(update={"confidence": 0.1}), horizon="epoch", known_codes=()).confidence == 0.1
