"""Stage 2, the analysts: news, sentiment, technical and fundamental, one module each.

Each analyst module holds its prompt, its deterministic abstention and the offline model's rules
for it; ``note`` holds the ``AnalystNote`` they all return, ``self_critique`` the one review pass of
a doubtful note, and ``panel`` the stage itself (``run_analysts`` and the quorum).
"""

from agents.roles.analysts.fundamental import fundamental_note, fundamental_request
from agents.roles.analysts.news import news_note, news_request
from agents.roles.analysts.note import ABSTAIN_CONFIDENCE, ABSTAIN_MODEL, ANALYST_ROLES, AnalystNote, AnalystRole
from agents.roles.analysts.panel import (
    CONFIDENCE_FLOOR,
    QUORUM,
    AnalystResult,
    abstention,
    analyst_request,
    quorum_met,
    run_analysts,
    successful_notes,
)
from agents.roles.analysts.self_critique import SELF_CRITIQUE_REASON, self_critique, self_critique_request
from agents.roles.analysts.sentiment import sentiment_note, sentiment_request
from agents.roles.analysts.technical import TECHNICAL_MINIMUM, technical_note, technical_request

__all__ = [
    "ABSTAIN_CONFIDENCE",
    "ABSTAIN_MODEL",
    "ANALYST_ROLES",
    "CONFIDENCE_FLOOR",
    "QUORUM",
    "SELF_CRITIQUE_REASON",
    "TECHNICAL_MINIMUM",
    "AnalystNote",
    "AnalystResult",
    "AnalystRole",
    "abstention",
    "analyst_request",
    "fundamental_note",
    "fundamental_request",
    "news_note",
    "news_request",
    "quorum_met",
    "run_analysts",
    "self_critique",
    "self_critique_request",
    "sentiment_note",
    "sentiment_request",
    "successful_notes",
    "technical_note",
    "technical_request",
]
