"""Model providers behind ``agents.domain.llm.LLMClient``: glue that may import the SDKs, never Django.

Import what you need from the modules (``anthropic_client``, ``openai_client``, ``ollama_client``,
``replay``, ``factory``); this package imports none of them, so computing a replay key or building
the offline client never loads an SDK. It holds only the one rule every HTTP provider shares.
"""

from __future__ import annotations


def is_transient_status(status: int) -> bool:
    """Whether an HTTP status is worth a pause and a retry.

    408 and 409 are request and lock timeouts, 429 the rate limit, 529 Anthropic's overload and
    the other 5xx the server side; 501 means "never supported", which no wait will change."""
    return status in (408, 409, 429) or (status >= 500 and status != 501)
