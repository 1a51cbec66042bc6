"""The pages' answer to a refusal, the twin of ``trading.api.errors`` for the API.

A page view that calls a service catches ``vocabulary.refusals.Refusal`` and nothing narrower:
``refusal_message`` shows the sentence as an error message with the details under it (each failing
risk check, each refused field on its own line), and ``refused`` also answers a permission
refusal with a 403 instead of sending the person back to a page they may not act on.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html, format_html_join

from vocabulary.refusals import NotAllowed, Refusal, kind_of


def refusal_sentence(refusal: Refusal) -> str:
    """``Refused: <message>.``, or the message alone as a sentence when it says what happened
    (the runs saved but not queued)."""
    text = refusal.message.strip()
    if not text.endswith((".", "!", "?")):
        text += "."
    if refusal.verdict:
        return f"{refusal.verdict}: {text}"
    return text[:1].upper() + text[1:]


def refusal_message(request: HttpRequest, refusal: Refusal) -> None:
    """An error message for the next page: the sentence, then each detail line under it (escaped:
    a check's detail or a refused value may hold anything)."""
    lines = refusal.lines()
    if not lines:
        messages.error(request, refusal_sentence(refusal))
        return
    details = format_html_join("", '<br><span class="refusal-detail">{}</span>', ((line,) for line in lines))
    messages.error(request, format_html("{}{}", refusal_sentence(refusal), details))


def refused(request: HttpRequest, refusal: Refusal, then: HttpResponse) -> HttpResponse:
    """A permission refusal is a 403 with its sentence (a forged POST by a viewer is not sent back
    to a form it cannot use); any other refusal is a message shown on ``then``."""
    if kind_of(refusal) is NotAllowed:
        return HttpResponse(refusal_sentence(refusal), status=403, content_type="text/plain; charset=utf-8")
    refusal_message(request, refusal)
    return then
