"""Pages for strategies: the list with their runs, and starting a strategy's run by hand.

The list also shows the critique's gate: the directives in force (rows trading owns, written by the
critique in reviews; nothing here imports it) and, for each run, whether the critique fired and why,
how the wait for it ended, and what held the run."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.db.models import Count, Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from trading.models import ResearchSignal, Strategy, StrategyDirective, StrategyRun
from trading.refusals import refused
from trading.strategies.runs import strategy_run_start
from vocabulary.refusals import Refusal, StateConflict


def strategy_list(request: HttpRequest) -> HttpResponse:
    in_force = StrategyDirective.objects.filter(lifted_at__isnull=True).order_by("-sequence")
    # The research signals a person attached (the research pages write them; detach is one click here).
    attached = ResearchSignal.objects.filter(detached_at__isnull=True).order_by("attached_at", "id")
    strategies = (
        Strategy.objects.select_related("retired_by")
        .prefetch_related(
            "universe",
            Prefetch("directives", queryset=in_force, to_attr="directives_in_force"),
            Prefetch("research_signals", queryset=attached, to_attr="attached_signals"),
        )
        .order_by("name")
    )
    runs = (
        StrategyRun.objects.select_related("strategy")
        .annotate(pipeline_count=Count("pipeline_runs"))
        .order_by("-as_of", "-id")[:100]
    )
    strategies_shown = list(strategies)
    for strategy in strategies_shown:
        _gate_of(strategy)
    return render(
        request,
        "trading/strategies.html",
        {
            "strategies": strategies_shown,
            "runs": runs,
            "can_start": request.user.has_perm("trading.start_run"),
            # Retiring (with its testament review) is an approver's or an admin's decision.
            "can_retire": request.user.has_perm("trading.approve_thesis"),
            "can_attach_signals": request.user.has_perm("trading.approve_thesis"),
        },
    )


def _gate_of(strategy: Strategy) -> None:
    """The gate as the strategy's next live run will meet it (the blocking directives, else the
    advisories in force), and whether its history replay is held, set on the strategy for the page."""
    in_force = strategy.directives_in_force  # type: ignore[attr-defined]  # the prefetch's list
    live = [d for d in in_force if not d.is_replay]
    strategy.gate_blocking = [d for d in live if d.is_blocking]  # type: ignore[attr-defined]
    strategy.gate_advisories = [d for d in live if not d.is_blocking]  # type: ignore[attr-defined]
    strategy.replay_blocking = [d for d in in_force if d.is_replay and d.is_blocking]  # type: ignore[attr-defined]


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
