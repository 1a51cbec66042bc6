"""Hand-made evidence packs for the critic's tests: the shape ``reviews.critique.evidence`` builds,
with the findings chosen by the test (which fired, how strongly, which ids they name)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

DETECTORS = (
    ("narrative_as_quant", 1, "Narrative picking dressed as quant"),
    ("single_signal_fixation", 2, "Single-signal fixation"),
    ("memory_echo_chamber", 3, "Memory echo chamber"),
    ("compliance_shield", 4, "Compliance as a shield"),
    ("overconfidence", 5, "Overconfidence"),
    ("frozen_parameters", 6, "Frozen parameters"),
    ("paralysis_or_churn", 7, "Paralysis or churn"),
)


def _flat(value: Any, prefix: str = "") -> dict[str, float | int]:
    figures: dict[str, float | int] = {}
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key != "ids":
                figures.update(_flat(item, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            name = item.get("detector", str(index)) if isinstance(item, Mapping) else str(index)
            figures.update(_flat(item, f"{prefix}.{name}"))
    elif isinstance(value, int | float) and not isinstance(value, bool):
        figures[prefix] = value
    return figures


def finding(
    detector: str,
    *,
    fired: bool = False,
    score: float | None = None,
    runs: Iterable[int] = (),
    positions: Iterable[int] = (),
    theses: Iterable[int] = (),
) -> dict[str, Any]:
    """One detector's finding; its figures and summary are those its real detector writes."""
    loop, title = next((loop, title) for key, loop, title in DETECTORS if key == detector)
    figures, summary = _figures(detector, fired)
    return {
        "detector": detector,
        "loop": loop,
        "title": title,
        "fired": fired,
        "score": score if score is not None else (0.6 if fired else 0.1),
        "figures": figures,
        "ids": {
            "runs": list(runs),
            "theses": list(theses),
            "positions": list(positions),
            "notes": [],
            "memories": [],
            "heuristics": [],
        },
        "summary": summary,
    }


def _figures(detector: str, fired: bool) -> tuple[dict[str, Any], str]:
    if detector == "narrative_as_quant":
        figures = {"theses": 12, "signal_ics_logged": 0 if fired else 4, "narrative_share": 0.75}
        return (
            figures,
            f"12 theses with {figures['signal_ics_logged']} signal ICs logged; 0.75 of theses rest on a note.",
        )
    if detector == "overconfidence":
        gap = 0.3125 if fired else 0.05
        figures = {"closed": 8, "win_rate": 0.375, "mean_conviction": round(0.375 + gap, 4), "conviction_gap": gap}
        return figures, (
            f"8 closed positions won 0.375 of the time against a mean stated conviction of "
            f"{figures['mean_conviction']}: a gap of {gap}."
        )
    if detector == "single_signal_fixation":
        figures = {"decisions": 10, "top_family_share": 0.9 if fired else 0.4, "distinct_families": 1 if fired else 4}
        return figures, (
            f"10 decisions: the trend family carried {figures['top_family_share']} of them; "
            f"{figures['distinct_families']} families drove any; 0 new in the second half."
        )
    figures = {"measure": 0.8 if fired else 0.1}
    return figures, f"The {detector.replace('_', ' ')} measure stands at {figures['measure']}."


def pack(
    *fired: str,
    strong: Iterable[str] = (),
    ids: Mapping[str, list[Any]] | None = None,
    strategy_id: int = 7,
    universe: Iterable[str] = ("RELIANCE", "TCS"),
    largest_position_pct: float = 8.5,
    max_notional_pct: float | None = 20.0,
    demoted: Iterable[str] = (),
    findings: Iterable[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A pack whose detectors named in ``fired`` fired (those in ``strong`` with a strong score)."""
    strong = set(strong)
    ids = dict(ids or {"runs": [101, 102, 103], "positions": [45, 46], "theses": [9, 10]})
    rows = (
        list(findings)
        if findings is not None
        else [
            finding(
                key,
                fired=key in fired,
                score=0.9 if key in strong else None,
                runs=ids.get("runs", [])[:2] if key in fired else (),
                positions=ids.get("positions", []) if key in ("overconfidence", "compliance_shield") else (),
            )
            for key, _, _ in DETECTORS
        ]
    )
    body: dict[str, Any] = {
        "strategy": {
            "id": strategy_id,
            "name": "Momentum large caps",
            "mandate": "Trade trend continuation in large caps; never more than 20% of capital in one name.",
            "run_count": 40,
            "universe": list(universe),
            "limits": {"risk_per_trade_pct": 1.0, "max_notional_pct": max_notional_pct, "max_positions": 5},
        },
        "window": {"first": "2026-09-01", "last": "2026-11-20", "as_of": "2026-11-20", "runs_read": 40},
        "performance": {"runs": 40, "closed": 8, "win_rate": 0.375, "largest_position_pct": largest_position_pct},
        "signals": {"distinct_families": 1, "ic_floor": 0.03, "demoted_cited": list(demoted)},
        "mandate": {"breaches": 0, "max_notional_pct": max_notional_pct},
        "loops": rows,
        "unexplored": {"families_never_used_count": 8},
        "ids": {
            "runs": ids.get("runs", []),
            "strategy_runs": [],
            "theses": ids.get("theses", []),
            "positions": ids.get("positions", []),
            "notes": [],
            "debates": [],
            "memories": [],
            "heuristics": list(demoted),
        },
    }
    body["figures"] = _flat(body)
    return body
