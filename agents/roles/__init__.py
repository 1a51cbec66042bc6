"""Every agent role in one place. Each role's module holds what it returns (its schema), what it
is asked (its prompt), how the offline model answers it (its rules) and the function the
orchestrator calls:

- ``analysts``: news, sentiment, technical, fundamental (stage 2), one module each, and the panel;
- ``researchers``: the bull and bear cases and their rebuttals (stage 5);
- ``manager``: the research manager who judges the debate (stage 5);
- ``trader``: the trade thesis (stage 6);
- ``reviewer``: the critique and lessons of a closed trade (stage 12);
- ``offline``: the rules-based model that routes a request to its role's rules.

Pure: no Django. Nothing here trusts a number a model restated: calibration, price anchoring and
the thesis validator are the pipeline's (``trading.pipeline.domain``).
"""

from agents.roles.analysts import (
    ABSTAIN_CONFIDENCE,
    ABSTAIN_MODEL,
    ANALYST_ROLES,
    CONFIDENCE_FLOOR,
    QUORUM,
    TECHNICAL_MINIMUM,
    AnalystNote,
    AnalystResult,
    AnalystRole,
    abstention,
    quorum_met,
    run_analysts,
    successful_notes,
)
from agents.roles.anchors import anchors_from_bundle
from agents.roles.manager import DebateResult, judge, judged_cases
from agents.roles.offline import OFFLINE_MODEL, OfflineModel
from agents.roles.researchers import BearCase, BullCase, build_cases, rebut_cases
from agents.roles.reviewer import (
    ReviewFacts,
    TradeReview,
    TradeReviewDraft,
    assemble_review,
    memory_tags,
    memory_text,
    review_trade,
    reviewer_draft,
)
from agents.roles.trader import DEEP_CONVICTION, TradeThesis, propose_thesis

__all__ = [
    "ABSTAIN_CONFIDENCE",
    "ABSTAIN_MODEL",
    "ANALYST_ROLES",
    "CONFIDENCE_FLOOR",
    "DEEP_CONVICTION",
    "OFFLINE_MODEL",
    "QUORUM",
    "TECHNICAL_MINIMUM",
    "AnalystNote",
    "AnalystResult",
    "AnalystRole",
    "BearCase",
    "BullCase",
    "DebateResult",
    "OfflineModel",
    "ReviewFacts",
    "TradeReview",
    "TradeReviewDraft",
    "TradeThesis",
    "abstention",
    "anchors_from_bundle",
    "assemble_review",
    "build_cases",
    "judge",
    "judged_cases",
    "memory_tags",
    "memory_text",
    "propose_thesis",
    "quorum_met",
    "rebut_cases",
    "review_trade",
    "reviewer_draft",
    "run_analysts",
    "successful_notes",
]
