"""Answers from recorded calls, for re-running a past analysis exactly. No network, no guessing.

The recorder stores ``prompt_key(role, system, prompt)`` on each call; the glue looks a key up
and returns the reply recorded for it. A prompt that was never recorded raises ``ReplayMiss``:
a replay that silently invented an answer would not be a replay.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable

from agents.domain.llm import ModelReply, ModelRequest, ReplayMiss

PROVIDER = "replay"

ReplayLookup = Callable[[str], ModelReply | None]


def prompt_key(role: str, system: str, prompt: str) -> str:
    """sha256 over the three texts. Encoded as a JSON list so the boundaries between them are part
    of the key: ("a", "bc") and ("ab", "c") never collide."""
    payload = json.dumps([role, system, prompt], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class RecordedCallsClient:
    """Answers a request with the reply recorded for the same role and prompt (provider key "replay")."""

    provider = PROVIDER

    def __init__(self, lookup: ReplayLookup) -> None:
        self._lookup = lookup

    def complete(self, request: ModelRequest, *, model: str) -> ModelReply:
        key = prompt_key(request.role, request.system, request.prompt)
        started = time.perf_counter()
        recorded = self._lookup(key)
        if recorded is None:
            raise ReplayMiss(
                f"replay: no recorded reply for role {request.role!r} on {request.symbol!r} (prompt key {key[:12]})"
            )
        # The recorded text and model are kept for the audit trail; the provider and token counts
        # say what this call cost now, which is nothing.
        return recorded.model_copy(
            update={
                "provider": PROVIDER,
                "input_tokens": 0,
                "output_tokens": 0,
                "latency_ms": (time.perf_counter() - started) * 1000,
            }
        )
