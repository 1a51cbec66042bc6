"""Retiring a strategy from its page: a person's decision, with a reason, that runs its testament.

GET shows the strategy, its flag (when the weekly reviews raised one, with the figures) and the
form; POST retires it (``reviews.effectiveness.strategy_retire``). Approvers and admins only: a
viewer or an outsider gets a 403 and nothing changes; a blank reason is refused and nothing changes.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from reviews.effectiveness import strategy_retire
from trading.models import Strategy
from trading.refusals import refusal_message, refused
from vocabulary.refusals import InputRefused, NotAllowed, Refusal, kind_of

TEMPLATE = "reviews/retire.html"
RETIRE_PERMISSION = "trading.approve_thesis"  # approvers and admins decide on the book


@login_required
@require_http_methods(["GET", "POST"])
def strategy_retire_view(request: HttpRequest, strategy_id: int) -> HttpResponse:
    strategy = get_object_or_404(Strategy, pk=strategy_id)
    if not request.user.has_perm(RETIRE_PERMISSION):
        return refused(
            request, NotAllowed("only an approver or an admin may retire a strategy"), redirect("strategy_list")
        )
    if request.method == "GET":
        return render(request, TEMPLATE, {"strategy": strategy})
    reason = request.POST.get("reason", "")
    try:
        strategy_retire(strategy=strategy, actor=request.user, reason=reason)
    except Refusal as refusal:
        # Shown on the form itself, the reason typed so far kept: 400 for a blank reason, 409 when
        # the strategy was retired meanwhile.
        refusal_message(request, refusal)
        status = 400 if kind_of(refusal) is InputRefused else 409
        return render(request, TEMPLATE, {"strategy": strategy, "reason": reason}, status=status)
    messages.success(request, f"{strategy.name} is retired: it no longer runs. Its testament review has been run.")
    return redirect("strategy_list")
