"""The playbook's pages: every heuristic with its record (``/reviews/heuristics/``), one heuristic's
citations over time (``/reviews/heuristics/<code>/``), and the decisions people take on them. The
figures come from ``reviews.playbook``; nothing is computed here."""

from __future__ import annotations

import re

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from agents.models import HEURISTIC_CODE_PATTERN, Heuristic
from reviews import playbook
from trading import edge
from trading.refusals import refused
from vocabulary.money import DEFAULT_CURRENCY
from vocabulary.refusals import Refusal

_CODE = re.compile(HEURISTIC_CODE_PATTERN)


def _heuristic(code: str) -> Heuristic:
    if not _CODE.match(code):
        raise Http404(f"{edge.short(code)!r} is not a heuristic code (H- and a number, e.g. H-7)")
    found = Heuristic.objects.filter(code=code).first()
    if found is None:
        raise Http404(f"there is no heuristic {code}")
    return found


def heuristic_list(request: HttpRequest) -> HttpResponse:
    """Any desk user may read it; approvers and admins see the buttons to decide on candidates."""
    overview = playbook.playbook_overview()
    return render(
        request,
        "reviews/heuristic_list.html",
        {
            "playbook": overview,
            "settings": overview.settings,
            "can_decide": playbook.can_decide(request.user),
            "currency": DEFAULT_CURRENCY,
            "here": "playbook",
        },
    )


def heuristic_detail(request: HttpRequest, code: str) -> HttpResponse:
    heuristic = _heuristic(code)
    detail = playbook.heuristic_detail(heuristic, currency=DEFAULT_CURRENCY)
    decisions = [
        decision for decision, (_, allowed_from) in playbook.DECISIONS.items() if heuristic.status in allowed_from
    ]
    return render(
        request,
        "reviews/heuristic_detail.html",
        {
            "heuristic": heuristic,
            "detail": detail,
            "record": detail.record,
            "chart": detail.chart,
            "decisions": decisions if playbook.can_decide(request.user) else [],
            "currency": DEFAULT_CURRENCY,
            "here": "playbook",
        },
    )


@require_POST
def heuristic_decide(request: HttpRequest, code: str) -> HttpResponse:
    """Activate, reject, demote or retire, with a reason. The permission and every rule are the
    service's, so a forged POST gets the same refusal as a click."""
    heuristic = _heuristic(code)
    from_list = request.POST.get("next") == "list"
    back = redirect("heuristic_list") if from_list else redirect("heuristic_detail", code=heuristic.code)
    decision = request.POST.get("decision", "").strip()
    reason = request.POST.get("reason", "").strip()
    try:
        edge.check_comment(reason, "reason")
        changed = playbook.heuristic_decide(heuristic=heuristic, decision=decision, user=request.user, reason=reason)
    except Refusal as refusal:
        return refused(request, refusal, back)
    messages.success(request, f"{changed.code} is now {changed.status}.")
    return back
