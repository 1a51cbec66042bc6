"""The offline model: a rules-based stand-in for an LLM that reads the evidence, not the prompt.

It answers every role with a schema-valid, evidence-citing JSON object, the same way every time.
It never looks at ``request.prompt``, so a hostile headline can only move it through the numbers
code computed for that headline (its sentiment and class), never through its words. For the same
reason it cites headlines by their number in the prompt (h1, h2, …) and never quotes their text.
Each role's rules live in that role's module; this one only routes a request to them.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from pydantic import BaseModel

from agents.domain.llm import ModelError, ModelReply, ModelRequest
from agents.roles._base import OFFLINE_MODEL, OFFLINE_PROVIDER, Evidence
from agents.roles.analysts import fundamental_note, news_note, self_critique, sentiment_note, technical_note
from agents.roles.critic import critique_draft
from agents.roles.manager import manager_result
from agents.roles.research_proposer import proposal_draft
from agents.roles.researchers import bear_case, bear_rebuttal, bull_case, bull_rebuttal
from agents.roles.retrospective import narrative_draft
from agents.roles.reviewer import reviewer_draft
from agents.roles.trader import trader_thesis

__all__ = ["OFFLINE_MODEL", "OfflineModel"]

# Every role a request can name, and the rules that answer it.
_RULES: dict[str, Callable[[str, Evidence], BaseModel]] = {
    "news": news_note,
    "sentiment": sentiment_note,
    "technical": technical_note,
    "fundamental": fundamental_note,
    "bull": bull_case,
    "bear": bear_case,
    "bull_rebuttal": bull_rebuttal,
    "bear_rebuttal": bear_rebuttal,
    "manager": manager_result,
    "trader": trader_thesis,
    "self_critique": self_critique,
    "reviewer": reviewer_draft,
    "retrospective": narrative_draft,
    "critic": critique_draft,
    "research_proposer": proposal_draft,
}


class OfflineModel:
    provider = OFFLINE_PROVIDER

    def complete(self, request: ModelRequest, *, model: str) -> ModelReply:
        rules = _RULES.get(request.role)
        if rules is None:
            raise ModelError(f"the offline model has no rules for role {request.role!r}")
        output = rules(request.symbol, request.evidence)
        text = json.dumps(output.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return ModelReply(
            text=text,
            provider=self.provider,
            model=OFFLINE_MODEL,
            input_tokens=(len(request.system) + len(request.prompt)) // 4,
            output_tokens=len(text) // 4,
            latency_ms=0.0,
        )
