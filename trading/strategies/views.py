"""Pages for strategies: the list with their runs, and starting a strategy's run by hand.

The list also shows the critique's gate: the directives in force (rows trading owns, written by the
critique in reviews; nothing here imports it) and, for each run, whether the critique fired and why,
how the wait for it ended, and what held the run."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.db.models import Count, Max, Prefetch
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import date as date_label
from django.template.defaultfilters import floatformat
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from agents.clients import provider_unavailable, providers_available
from trading import edge
from trading.models import (
    PipelineRun,
    ReplayJob,
    ResearchSignal,
    Strategy,
    StrategyDirective,
    StrategyRun,
    Thesis,
)
from trading.pipeline.selectors import StrategyPerformance, strategy_performance
from trading.refusals import refused
from trading.strategies.replay_jobs import (
    replay_job_cancel,
    replay_job_create,
    replay_job_progress,
    replay_job_resume,
)
from trading.strategies.runs import strategy_run_start
from vocabulary.refusals import InputRefused, Refusal, StateConflict


def _strategy_runs() -> list[StrategyRun]:
    """The latest hundred strategy runs, each with its pipeline runs (and their theses) to link."""
    pipeline_runs = PipelineRun.objects.select_related("instrument", "thesis").order_by("instrument__symbol", "id")
    return list(
        StrategyRun.objects.select_related("strategy")
        .annotate(pipeline_count=Count("pipeline_runs"))
        .prefetch_related(Prefetch("pipeline_runs", queryset=pipeline_runs, to_attr="runs_shown"))
        .order_by("-as_of", "-id")[:100]
    )


def _latest_jobs(strategy_ids: list[int]) -> dict[int, ReplayJob]:
    """Each strategy's latest replay job (two queries whatever the history)."""
    latest = ReplayJob.objects.filter(strategy_id__in=strategy_ids).values("strategy_id").annotate(last=Max("id"))
    jobs = ReplayJob.objects.filter(pk__in=[row["last"] for row in latest])
    return {job.strategy_id: job for job in jobs}


def _job_json(job: ReplayJob) -> dict[str, Any]:
    """``replay_job_progress`` with what the page shows of it, and where its buttons post."""
    progress = replay_job_progress(job)
    eta = progress["eta_seconds"]
    return {
        **progress,
        "percent_label": f"{progress['percent']:.1f}%",
        # Only while it runs: a finished job has nothing left (its 0 s is for the API's readers).
        "eta_label": _duration(eta) if eta is not None and job.status == ReplayJob.Status.RUNNING else "",
        "window": f"{job.start:%d %b %Y} – {job.end:%d %b %Y}",
        "policy": job.policy,
        "provider": job.provider,
        "can_cancel": job.status in (ReplayJob.Status.QUEUED, ReplayJob.Status.RUNNING),
        "can_resume": job.status in (ReplayJob.Status.CANCELLED, ReplayJob.Status.FAILED),
        "cancel_url": reverse("replay_job_cancel", args=[job.pk]),
        "resume_url": reverse("replay_job_resume", args=[job.pk]),
    }


def _duration(seconds: float) -> str:
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, seconds_left = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {seconds_left:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _run_json(strategy_run: StrategyRun) -> dict[str, Any]:
    return {
        "id": strategy_run.pk,
        "strategy": strategy_run.strategy.name,
        "as_of": date_label(strategy_run.as_of, "d M Y"),
        "decision": strategy_run.decision,
        "pipeline_count": strategy_run.pipeline_count,  # type: ignore[attr-defined]  # the annotation
        "runs_url": f"{reverse('run_list')}?{urlencode(_runs_filter(strategy_run))}",
        "runs": [
            {
                "id": run.pk,
                "url": reverse("run_detail", args=[run.pk]),
                "symbol": run.instrument.symbol,
                "status": run.status,
                "thesis_url": reverse("thesis_detail", args=[thesis.pk]) if (thesis := _thesis_of(run)) else "",
                "thesis_label": f"{thesis.direction} · {floatformat(thesis.conviction, 2)}" if thesis else "",
            }
            for run in strategy_run.runs_shown  # type: ignore[attr-defined]  # the prefetch's list
        ],
    }


def _runs_filter(strategy_run: StrategyRun) -> dict[str, str]:
    return {"strategy": str(strategy_run.strategy_id), "kind": "replay" if strategy_run.is_replay else "live"}


def _thesis_of(run: PipelineRun) -> Thesis | None:
    return getattr(run, "thesis", None)  # the reverse one-to-one is absent, not None, without a thesis


def _performance_of(strategies: Sequence[Strategy]) -> None:
    """Each strategy's live and replay performance, set on it for the page."""
    performance = strategy_performance([strategy.pk for strategy in strategies])
    for strategy in strategies:
        strategy.performance = [  # type: ignore[attr-defined]
            (kind, performance.get((strategy.pk, is_replay), StrategyPerformance()).labels())
            for kind, is_replay in (("live", False), ("replay", True))
        ]


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
    strategies_shown = list(strategies)
    for strategy in strategies_shown:
        _gate_of(strategy)
    _performance_of(strategies_shown)
    jobs = _latest_jobs([strategy.pk for strategy in strategies_shown])
    for strategy in strategies_shown:
        job = jobs.get(strategy.pk)
        strategy.replay_job = _job_json(job) if job is not None else None  # type: ignore[attr-defined]
        strategy.runs_query = urlencode({"strategy": str(strategy.pk), "kind": "all"})  # type: ignore[attr-defined]
    offered = providers_available()
    return render(
        request,
        "trading/strategies.html",
        {
            "strategies": strategies_shown,
            "runs": _strategy_runs(),
            "can_start": request.user.has_perm("trading.start_run"),
            # Retiring (with its testament review) is an approver's or an admin's decision.
            "can_retire": request.user.has_perm("trading.approve_thesis"),
            "can_attach_signals": request.user.has_perm("trading.approve_thesis"),
            "providers": offered,
            "default_replay_provider": "offline" if "offline" in offered else (offered[0] if offered else ""),
            "state_url": reverse("strategy_state"),
        },
    )


def strategy_state(request: HttpRequest) -> JsonResponse:
    """The strategies page's live state as JSON (static/js/strategies.js polls it): each strategy's
    performance and latest replay job with its progress, and the recent strategy runs with links to
    their pipeline runs and theses."""
    strategies = list(Strategy.objects.order_by("name"))
    performance = strategy_performance([strategy.pk for strategy in strategies])
    jobs = _latest_jobs([strategy.pk for strategy in strategies])
    return JsonResponse(
        {
            "strategies": [
                {
                    "id": strategy.pk,
                    "run_count": strategy.run_count,
                    "performance": {
                        kind: performance.get((strategy.pk, is_replay), StrategyPerformance()).labels()
                        for kind, is_replay in (("live", False), ("replay", True))
                    },
                    "job": _job_json(jobs[strategy.pk]) if strategy.pk in jobs else None,
                }
                for strategy in strategies
            ],
            "runs": [_run_json(strategy_run) for strategy_run in _strategy_runs()],
        }
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
    provider = strategy.provider or str(settings.LLM["PROVIDER"])
    if problem := provider_unavailable(provider):
        # Its runs could only fail in the worker: refused here, with why, before anything is written.
        return refused(
            request, StateConflict(f"{strategy.name} runs on {provider}, which cannot run here: {problem}"), back
        )
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


def _replay_window(request: HttpRequest) -> tuple[dt.date, dt.date]:
    problems = {}
    days = {}
    for name in ("start", "end"):
        try:
            day = edge.parse_date(request.POST.get(name), name)
        except edge.InputInvalid as problem:
            problems[name] = problem.message
            continue
        if day is None:
            problems[name] = f"{name} is required (YYYY-MM-DD)"
        else:
            days[name] = day
    if problems:
        raise InputRefused("; ".join(problems.values()), problems)
    return days["start"], days["end"]


@require_POST
@permission_required("trading.start_run", raise_exception=True)
def replay_start(request: HttpRequest, strategy_id: int) -> HttpResponse:
    """Start a history replay of the strategy from the page: a window, an approval policy and a
    provider this desk can run (an unconfigured one is refused with why, nothing created)."""
    strategy = get_object_or_404(Strategy, pk=strategy_id)
    back = redirect(f"{reverse('strategy_list')}#strategy-{strategy.pk}")
    provider = (request.POST.get("provider") or "").strip()
    try:
        if problem := provider_unavailable(provider):
            raise InputRefused(f"provider: {problem}", {"provider": problem})
        start, end = _replay_window(request)
        job = replay_job_create(
            strategy=strategy,
            start=start,
            end=end,
            policy=edge.parse_name(request.POST.get("policy") or "all", "policy"),
            provider=provider,
            user=request.user,
        )
    except Refusal as refusal:
        return refused(request, refusal, back)
    messages.success(
        request,
        f"{strategy.name}: replay of {job.start:%d %b %Y} – {job.end:%d %b %Y} queued ({job.days_total} sessions).",
    )
    return back


@require_POST
@permission_required("trading.start_run", raise_exception=True)
def replay_cancel(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(ReplayJob.objects.select_related("strategy"), pk=job_id)
    back = redirect(f"{reverse('strategy_list')}#strategy-{job.strategy_id}")
    try:
        reason = edge.check_comment(request.POST.get("reason") or "", "reason")
        job = replay_job_cancel(job, request.user, reason)
    except Refusal as refusal:
        return refused(request, refusal, back)
    said = "cancelled" if job.status == ReplayJob.Status.CANCELLED else "stops after the day it is on"
    messages.success(request, f"{job.strategy.name}: the replay {said}.")
    return back


@require_POST
@permission_required("trading.start_run", raise_exception=True)
def replay_resume(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(ReplayJob.objects.select_related("strategy"), pk=job_id)
    back = redirect(f"{reverse('strategy_list')}#strategy-{job.strategy_id}")
    try:
        job = replay_job_resume(job, request.user)
    except Refusal as refusal:
        return refused(request, refusal, back)
    after = f" after {job.last_day:%d %b %Y}" if job.last_day else ""
    messages.success(request, f"{job.strategy.name}: the replay resumes{after}.")
    return back


def replay_progress(request: HttpRequest, job_id: int) -> JsonResponse:
    """One replay job's progress as JSON: percent, days, ETA (``replay_job_progress``)."""
    job = get_object_or_404(ReplayJob, pk=job_id)
    return JsonResponse(_job_json(job))
