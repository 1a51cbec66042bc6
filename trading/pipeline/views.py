from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from agents.clients import PROVIDERS
from agents.domain.citations import mismatch_warnings
from agents.recording import run_totals
from trading import edge
from trading.market import presenters
from trading.models import Instrument, PipelineRun
from trading.pipeline import selectors
from trading.pipeline.start import RunRequestInvalid, RunsNotQueued, pipeline_runs_start


def _start_form_context(request: HttpRequest) -> dict:
    return {
        "instruments": Instrument.objects.filter(is_active=True).order_by("symbol"),
        "providers": PROVIDERS,
        "default_provider": settings.LLM["PROVIDER"],
        "can_start": request.user.has_perm("trading.start_run"),
    }


def _replay_flag_checked(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """``?replay=`` must be a flag: anything else shows the default list with the reason, as a 400."""

    @wraps(view)
    def checked(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            edge.parse_flag(request.GET.get("replay"), "replay")
        except edge.InputInvalid as problem:
            messages.error(request, f"{problem}; showing live runs.")
            request.GET = request.GET.copy()
            del request.GET["replay"]
            response = view(request, *args, **kwargs)
            response.status_code = 400
            return response
        return view(request, *args, **kwargs)

    return checked


@_replay_flag_checked
def run_list(request: HttpRequest) -> HttpResponse:
    """Live runs; ``?replay=1`` adds the runs of history replays (badged in the table)."""
    with_replays = edge.parse_flag(request.GET.get("replay"), "replay")
    runs = selectors.run_rows(with_replays=with_replays)
    return render(
        request, "trading/runs.html", {"runs": runs, "with_replays": with_replays, **_start_form_context(request)}
    )


@require_POST
@permission_required("trading.start_run", raise_exception=True)
def run_start(request: HttpRequest) -> HttpResponse:
    symbols = request.POST.getlist("symbols")
    provider = request.POST.get("provider", settings.LLM["PROVIDER"])
    instruments = list(Instrument.objects.filter(symbol__in=symbols, is_active=True))
    problems = []
    if not instruments:
        problems.append("Choose at least one instrument.")
    if unknown := sorted(set(symbols) - {i.symbol for i in instruments}):
        problems.append(f"Unknown or inactive instrument(s): {edge.short(', '.join(unknown))}.")
    if provider not in PROVIDERS:
        problems.append(f"Unknown provider {edge.short(provider)!r}.")
    try:
        as_of = edge.parse_date(request.POST.get("as_of"), "as_of") or edge.default_run_as_of(instruments)
    except edge.InputInvalid as problem:
        problems.append(f"{problem}.")
        as_of = None
    if problems:
        for problem in problems:
            messages.error(request, problem)
        return redirect("run_list")
    try:
        runs = pipeline_runs_start(instruments=instruments, as_of=as_of, provider=provider, user=request.user)
    except RunRequestInvalid as problem:
        messages.error(request, f"{problem}.")
        return redirect("run_list")
    except RunsNotQueued as refused:
        messages.error(
            request,
            f"Saved {len(refused.runs)} run(s), but {len(refused.unsent)} could not be queued: {refused.reason}. "
            "They will start by themselves when the queue is back; do not start them again.",
        )
        return redirect("run_list")
    messages.success(request, f"Queued {len(runs)} run(s) as of {runs[0].as_of:%d %b %Y} with the {provider} model.")
    if len(runs) == 1:
        return redirect("run_detail", run_id=runs[0].pk)
    return redirect("run_list")


def _evidence_flags(outputs: dict) -> dict:
    """What code flagged in a run's evidence: note citations the bundle contradicts, and headlines
    kept out of every score because they carry instructions for a model."""
    citations = outputs.get("analysts", {}).get("citations", {})
    news = outputs.get("features", {}).get("bundle", {}).get("news", {})
    return {"citation_warnings": mismatch_warnings(citations), "flagged_headlines": news.get("flagged_headlines", [])}


def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(PipelineRun.objects.select_related("instrument"), pk=run_id)
    context = {
        "run": run,
        **presenters.run_context(run, run_totals(run)),
        **_evidence_flags(presenters.run_outputs(run)),
    }
    template = "trading/_run_body.html" if request.GET.get("fragment") else "trading/run.html"
    return render(request, template, context)
