"""Cut credentials out of text before it is stored, logged or sent. Pure: no Django, no I/O.

Provider errors are stored and shown verbatim, and a gateway that echoes the request's headers puts
the API key into them. Two nets, both applied: the values we know are secret (configured keys, the
Django secret key, secret-looking environment variables), and the shapes credentials take whether
or not we configured them (bearer tokens, authorization and api-key header values, ``sk-`` keys).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

REDACTED = "[redacted]"
# Shorter values are not credentials, and cutting them would shred ordinary text ("1", "true").
MIN_SECRET_LENGTH = 8
SECRET_NAME_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "SECRET_KEY")

# A header or field that carries a credential, then its value: "Authorization: Basic abc",
# "'x-api-key': 'abc'", api_key="abc". "Authorization" is also an English word ("regulatory
# authorization: granted"), so its value is cut only when it looks like a credential: a scheme and
# a token, or one token with a digit in it. A field named for a key is a key whatever it holds.
_TOKEN = r"[A-Za-z0-9\-._~+/=]"
_AUTHORIZATION = re.compile(
    rf"""(?ix)
    (?P<name>\b(?:proxy-)?authorization)
    (?P<sep>["']?\s*[:=]\s*["']?)
    (?!\[redacted\])
    (?:(?:bearer|basic|token|digest|apikey|key)\s+{_TOKEN}{{6,}}|(?={_TOKEN}{{8,}}){_TOKEN}*\d{_TOKEN}*)
    """
)
_KEY_FIELD = re.compile(
    rf"""(?ix)
    (?P<name>\bx-api-key|\bapi[-_]?key|\baccess[-_]?token)
    (?P<sep>["']?\s*[:=]\s*["']?)
    (?!\[redacted\])
    {_TOKEN}{{6,}}
    """
)
# RFC 6750 token68 characters; 8 or more, so "the bearer of bad news" survives.
_BEARER = re.compile(r"(?i)\bbearer\s+(?!\[redacted\])[A-Za-z0-9\-._~+/]{8,}=*")
# OpenAI (sk-..., sk-proj-...) and Anthropic (sk-ant-...) key shapes; 16+ characters after "sk-" so
# a word like "sk-learn" survives.
_PROVIDER_KEY = re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}")
# The words without which none of the shapes above can match, case aside: "authorization",
# "bearer", "api" with "key", "access" with "token" (and "sk-", case and all).
_SHAPE_WORDS = (("authorization",), ("bearer",), ("api", "key"), ("access", "token"))
# The letters outside ASCII that a case-blind pattern matches to an ASCII letter without lowering to
# it: dotted and dotless i, long s, Kelvin sign.
_CASE_BLIND_EXTRAS = ("\u0130", "\u0131", "\u017f", "\u212a")


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every value in ``secrets`` and every credential-shaped token replaced by
    ``[redacted]``. The rest of the text (what went wrong) is kept."""
    if not text:
        return text
    # Longest first: a secret that contains a shorter one is cut whole, not left in pieces.
    for secret in sorted({s for s in secrets if s and len(s.strip()) >= MIN_SECRET_LENGTH}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return _cut_shapes(text) if may_hold_shape(text) else text


def may_hold_shape(text: str) -> bool:
    """False only when no credential shape can match ``text``: it has none of their words. Four
    regular expressions over a prompt-sized text cost a few hundred microseconds; this costs a few.

    Lowering the text is the patterns' case-blind match except for four letters outside ASCII
    that match an ASCII one without lowering to it (``_CASE_BLIND_EXTRAS``): a text holding one
    of them is left to the patterns."""
    if "sk-" in text or (not text.isascii() and any(extra in text for extra in _CASE_BLIND_EXTRAS)):
        return True
    lowered = text.lower()
    return any(all(word in lowered for word in words) for words in _SHAPE_WORDS)


def _cut_shapes(text: str) -> str:
    text = _AUTHORIZATION.sub(_keep_field_name, text)
    text = _KEY_FIELD.sub(_keep_field_name, text)
    text = _BEARER.sub(f"Bearer {REDACTED}", text)
    return _PROVIDER_KEY.sub(REDACTED, text)


def _keep_field_name(match: re.Match[str]) -> str:
    return f"{match['name']}{match['sep']}{REDACTED}"


def secrets_in_environ(environ: Mapping[str, str]) -> list[str]:
    """Values of variables whose names say they hold a credential (``*_API_KEY``, ``*_TOKEN``,
    ``*_SECRET``, ``*_PASSWORD``, ``SECRET_KEY``), long enough to be one."""
    return [
        value.strip()
        for name, value in environ.items()
        if name.upper().endswith(SECRET_NAME_SUFFIXES) and len(value.strip()) >= MIN_SECRET_LENGTH
    ]
