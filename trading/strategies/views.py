"""Pages for stages 8-11: the approval queue, a thesis, the portfolio."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from trading.models import Strategy, StrategyRun
from trading.strategies.runs import strategy_run_start


def strategy_list(request: HttpRequest) -> HttpResponse:
    strategies = Strategy.objects.prefetch_related("universe").order_by("name")
    runs = (
        StrategyRun.objects.select_related("strategy")
        .annotate(pipeline_count=Count("pipeline_runs"))
        .order_by("-as_of", "-id")[:100]
    )
    return render(
        request,
        "trading/strategies.html",
        {"strategies": strategies, "runs": runs, "can_start": request.user.has_perm("trading.start_run")},
    )


@require_POST
@permission_required("trading.start_run", raise_exception=True)
def strategy_start(request: HttpRequest, strategy_id: int) -> HttpResponse:
    strategy = get_object_or_404(Strategy, pk=strategy_id)
    try:
        strategy_run = strategy_run_start(strategy=strategy, user=request.user)
    except ValueError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"{strategy.name}: run of {strategy_run.as_of:%d %b %Y} started.")
    return redirect("strategy_list")
