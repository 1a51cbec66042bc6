"""The analyst panel as the roles after it read it: the researchers, the manager and the trader.

Both sides of each role are here: how a prompt prints the panel, and how the offline rules pick the
notes leaning one way. The forecast is cut out on the way (``without_forecast``), so a baseline
drift the technical analyst weighed once is not counted again at every step of the debate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from agents.roles._base import Evidence, fmt, short, signed
from agents.roles.analysts.note import ANALYST_ROLES, AnalystNote

Side = Literal["bull", "bear"]
MAX_POINTS_PER_ANALYST = 2


def ordered(notes: Sequence[AnalystNote]) -> list[AnalystNote]:
    """The notes in panel order (news, sentiment, technical, fundamental), so prompts never vary."""
    order = {role: index for index, role in enumerate(ANALYST_ROLES)}
    return sorted(notes, key=lambda note: order.get(note.role, len(order)))


# --- the forecast stays with the technical analyst and the trader --------------------------------

# The price forecast reaches two requests only: the technical analyst's (it weighs it as one piece
# of evidence) and the trader's (through the anchors). The researchers and the manager judge the
# panel, and a baseline drift repeated at every step would be counted again at each of them. So a
# note that cites the forecast loses those parts before it travels on: whole subscores, points and
# evidence items, and the clauses of its summary that mention it. (The anchors' forecast keys are
# dropped for the manager by ``agents.roles.anchors.without_forecast_anchors``.)
_FORECAST_WORDS = re.compile(r"forecast|baseline drift|expected (?:move|price)|price band", re.IGNORECASE)
_CLAUSES = re.compile(r"(;\s+|(?<=[.!?])\s+)")


def _mentions_forecast(text: str) -> bool:
    return _FORECAST_WORDS.search(text) is not None


def _summary_without_forecast(summary: str) -> str:
    parts = _CLAUSES.split(summary)
    kept = [
        part + (parts[index + 1] if index + 1 < len(parts) else "")
        for index, part in enumerate(parts)
        if index % 2 == 0 and part.strip() and not _mentions_forecast(part)
    ]
    text = "".join(kept).strip().rstrip(";").strip()
    if not text:
        return "(the summary cited only the forecast; withheld)"
    return text if text.endswith((".", "!", "?")) else f"{text}."


def without_forecast(note: AnalystNote) -> AnalystNote:
    """The note as the debate may read it: nothing in it cites the price forecast."""
    texts = [note.summary, *note.key_points, *note.evidence, *note.subscores]
    if not any(_mentions_forecast(text) for text in texts):
        return note
    return note.model_copy(
        update={
            "summary": _summary_without_forecast(note.summary),
            "key_points": [point for point in note.key_points if not _mentions_forecast(point)],
            "evidence": [item for item in note.evidence if not _mentions_forecast(item)],
            "subscores": {name: score for name, score in note.subscores.items() if not _mentions_forecast(name)},
        }
    )


def debate_panel(notes: Sequence[AnalystNote]) -> list[AnalystNote]:
    """The notes in panel order, as the researchers and the manager may read them."""
    return [without_forecast(note) for note in ordered(notes)]


# --- the panel in a prompt -----------------------------------------------------------------------


def note_numbers(note: AnalystNote) -> str:
    flag = " abstained" if note.abstained else ""
    return f"- {note.role}:{flag} stance={signed(note.stance)} confidence={fmt(note.confidence)}"


def panel_points(notes: Sequence[AnalystNote]) -> list[str]:
    return [f"{note.role}: {point}" for note in notes for point in note.key_points[:MAX_POINTS_PER_ANALYST]]


def is_on_side(note: AnalystNote, side: Side) -> bool:
    if note.abstained:
        return False
    return note.stance > 0 if side == "bull" else note.stance < 0


def dump_notes(notes: Sequence[AnalystNote]) -> list[dict[str, Any]]:
    return [note.model_dump(mode="json") for note in notes]


# --- the panel in the offline rules --------------------------------------------------------------


def voting(notes: Sequence[Evidence]) -> list[Evidence]:
    return [note for note in notes if not note.get("abstained")]


def leaning(notes: Sequence[Evidence], side: str) -> list[Evidence]:
    """Notes on ``side``, strongest (stance × confidence) first; panel order breaks ties."""
    sign = 1.0 if side == "bull" else -1.0
    chosen = [(index, note) for index, note in enumerate(voting(notes)) if sign * note["stance"] > 0]
    chosen.sort(key=lambda pair: (-abs(pair[1]["stance"]) * pair[1]["confidence"], pair[0]))
    return [note for _, note in chosen]


def _lead_point(note: Evidence) -> str:
    points = note.get("key_points") or [note.get("summary", "")]
    return points[0]


def note_line(note: Evidence) -> str:
    """One note in one line: role, stance, confidence and its lead point."""
    return (
        f"{note['role']} stance {signed(note['stance'])} (confidence {fmt(note['confidence'])}): "
        f"{short(_lead_point(note), 250)}"
    )
