"""Pages for strategies: the list with their runs, and starting a strategy's run by hand."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from trading.models import Strategy, StrategyRun
from trading.refusals import refused
from trading.strategies.runs import strategy_run_start
from vocabulary.refusals import Refusal, StateConflict


def strategy_list(request: HttpRequest) -> HttpResponse:
    strategies = Strategy.objects.select_related("retired_by").prefetch_related("universe").order_by("name")
    runs = (
        StrategyRun.objects.select_related("strategy")
        .annotate(pipeline_count=Count("pipeline_runs"))
        .order_by("-as_of", "-id")[:100]
    )
    return render(
        request,
        "trading/strategies.html",
        {
            "strategies": strategies,
            "runs": runs,
            "can_start": request.user.has_perm("trading.start_run"),
            # Retiring (with its testament review) is an approver's or an admin's decision.
            "can_retire": request.user.has_perm("trading.approve_thesis"),
        },
    )


@require_POST
@permission_required("trading.start_run", raise_exception=True)
def strategy_start(request: HttpRequest, strategy_id: int) -> HttpResponse:
    strategy = get_object_or_404(Strategy, pk=strategy_id)
    back = redirect("strategy_list")
    if strategy.retired_at is not None:
        return refused(request, StateConflict(f"{strategy.name} is retired: a retired strategy no longer runs"), back)
    try:
        strategy_run = strategy_run_start(strategy=strategy, user=request.user)
    except Refusal as refusal:
        return refused(request, refusal, back)
    except ValueError as error:
        # strategy_run_start still says no with a ValueError (no bars for the universe, a provider
        # without a price): the desk's state, not the request, so a state conflict.
        return refused(request, StateConflict(str(error)), back)
    messages.success(request, f"{strategy.name}: run of {strategy_run.as_of:%d %b %Y} started.")
    return back
