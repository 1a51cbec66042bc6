"""The self-critique: one review pass an analyst makes over its own low-confidence note.

Exactly one pass, and never for the offline model (its rules would only repeat themselves). A
failed review leaves the original, valid note standing.
"""

from __future__ import annotations

import json

from agents.domain.hygiene import fence
from agents.domain.llm import Budget, ModelChoice, ModelRequest, Recorder, RetryPolicy, StageFailed
from agents.roles._base import OFFLINE_MODEL, Evidence, ask, guard, short, system_text
from agents.roles.analysts.note import AnalystNote, model_vote

JOB = (
    "You are the same analyst, reviewing your own note once. Ask what would change your stance and "
    "whether the low confidence is justified, then return the final note."
)
SELF_CRITIQUE_REASON = (
    "Self-critique: confidence is below the floor; checked what would change the stance "
    "and whether the low confidence is justified by thin or conflicting evidence."
)


def self_critique_request(original: ModelRequest, note: AnalystNote) -> ModelRequest:
    """The one review pass for a low-confidence note: the original inputs, then the note (fenced)."""
    note_json = json.dumps(note.model_dump(mode="json"), sort_keys=True)
    prompt = (
        f"{original.prompt}\n\nYour note (model-written):\n{fence([note_json])}\n\n"
        "Task: What would change your stance, and is the low confidence justified? Return the final note "
        f"with the same role ({note.role}) and symbol ({original.symbol})."
    )
    return ModelRequest(
        role="self_critique",
        symbol=original.symbol,
        system=system_text(JOB, AnalystNote),
        prompt=prompt,
        output_schema=AnalystNote,
        tier=original.tier,
        evidence={"note": note.model_dump(mode="json"), "reason": SELF_CRITIQUE_REASON, "original": original.evidence},
    )


def self_critique(symbol: str, evidence: Evidence) -> AnalystNote:
    """The offline rules: the same note, with the reason for the review as its last point."""
    note = AnalystNote.model_validate(evidence["note"])
    reason = short(evidence.get("reason") or SELF_CRITIQUE_REASON)
    # Keep the schema's limit of eight points: the reason replaces the last one when full.
    points = [*note.key_points[:7], reason]
    return note.model_copy(update={"key_points": points, "model_used": OFFLINE_MODEL})


def critique_once(
    choice: ModelChoice,
    request: ModelRequest,
    note: AnalystNote,
    *,
    recorder: Recorder,
    budget: Budget | None,
    retry: RetryPolicy | None,
) -> AnalystNote:
    """Exactly one review pass. If the review itself fails, the original (valid) note stands."""
    review = self_critique_request(request, note)
    validate = guard(request.symbol, role=note.role)
    try:
        reviewed, model = ask(
            choice, review, AnalystNote, recorder=recorder, budget=budget, retry=retry, validate=validate
        )
    except StageFailed:
        return note
    return model_vote(reviewed, model)
