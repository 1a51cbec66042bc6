"""How the desk says no: one exception type with a sentence for a person and JSON-able details.

Every layer that refuses something a person asked for raises a ``Refusal`` of one of three kinds,
so the API and the pages answer it the same way without knowing where it came from:

- ``InputRefused``: the request itself is wrong (a date outside the window, an unknown symbol, a
  missing reason); sending something else fixes it. The API answers 400.
- ``NotAllowed``: the person's role does not allow it. The API answers 403.
- ``StateConflict``: the request is fine but the desk's state forbids it now (a limit, a thesis
  already decided, a stale price). The API answers 409. ``ServiceUnavailable`` is the state
  conflict of a service the desk needs being down (the task queue): 503, try again later.

A refusal may be of more than one kind (``DecisionRefused`` is a state conflict, its permission
case also ``NotAllowed``); ``kind_of`` picks the one that decides the answer. Pure; no Django.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["InputRefused", "NotAllowed", "Refusal", "ServiceUnavailable", "StateConflict", "kind_of"]


class Refusal(Exception):
    """``message`` is a sentence the person can act on (no trailing full stop: the page and the API
    punctuate it); ``details`` is JSON-able (failing checks with their figures, refused fields)."""

    # The word a page puts before the message; empty when the message already says what happened.
    verdict = "Refused"

    def __init__(self, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})

    def lines(self) -> list[str]:
        """The details as lines a person reads under the message, one fact a line: each failing
        check as ``name: detail``, each refused field as ``field: problem``. Values a person
        cannot read (ids, nested objects) are left to the API body."""
        return [line for key, value in self.details.items() for line in _lines(key, value)]


class InputRefused(Refusal):
    """The request is wrong; the message names the value and why."""


class NotAllowed(Refusal):
    """The person's role does not allow this."""


class StateConflict(Refusal):
    """Allowed and well formed, but the desk's state forbids it now."""


class ServiceUnavailable(StateConflict):
    """A service the desk needs (the task queue) is down: the same request works once it is back."""

    verdict = ""


# The order decides a refusal that is several kinds at once: a permission refusal is a 403 whatever
# else it is, a wrong input a 400 before the state is considered.
KINDS: tuple[type[Refusal], ...] = (NotAllowed, InputRefused, ServiceUnavailable, StateConflict)


def kind_of(refusal: Refusal) -> type[Refusal]:
    """The kind that decides how ``refusal`` is answered (``StateConflict`` for a bare ``Refusal``:
    the desk said no, and nothing says the person or the request is to blame)."""
    return next((kind for kind in KINDS if isinstance(refusal, kind)), StateConflict)


def _lines(key: str, value: Any) -> list[str]:
    if isinstance(value, str):
        return [_labelled(key, value)]
    if isinstance(value, list | tuple):
        return [line for item in value for line in _item_lines(key, item)]
    return []


def _item_lines(key: str, item: Any) -> list[str]:
    if isinstance(item, str):
        return [_labelled(key, item)]
    if isinstance(item, Mapping) and "detail" in item:
        return [_labelled(str(item.get("name") or key), str(item["detail"]))]
    return []


def _labelled(label: str, text: str) -> str:
    """``label: text``, unless the text already starts with its label (``as_of 2030-01-01 is ...``)."""
    return text if text.startswith(label) else f"{label}: {text}"
