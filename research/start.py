"""Starting a research session from the page or the API: the permission, the service that checks
and creates the session, and the worker it is queued to once the row is committed.

The values are ``research.services.session_create``'s to check (a clear ``InputRefused`` per field,
nothing created); this module adds only the permission and the queueing. The task is sent by its
name, ``research.run_session``: the session id goes in, the worker re-reads the row.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import transaction

from research import services
from research.models import ResearchSession
from vocabulary.refusals import InputRefused, NotAllowed

__all__ = ["RUN_PERMISSION", "RUN_TASK", "can_run", "form_request", "queue_session", "session_start"]

log = logging.getLogger(__name__)

RUN_PERMISSION = "research.run_research"
RUN_TASK = "research.run_session"
INT_FIELDS = ("max_trials", "max_tokens", "dry_rounds", "seed")
# The session's integer columns hold 32-bit values (PostgreSQL's integer): a larger number is refused
# here, by name, rather than overflowing the row.
MAX_COLUMN = 2**31 - 1
TRUE = ("1", "true", "on", "yes")


def can_run(user: Any) -> bool:
    return bool(user.has_perm(RUN_PERMISSION))


def defaults() -> dict[str, int]:
    research = settings.RESEARCH  # mixed values: the checker sees objects; these are ints (env_int)
    return {
        "max_trials": int(str(research["MAX_TRIALS"])),
        "max_tokens": int(str(research["MAX_TOKENS"])),
        "dry_rounds": int(str(research["DRY_ROUNDS"])),
        "seed": 0,
    }


def _whole_number(text: str, name: str, problems: dict[str, list[str]]) -> int | None:
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        problems[name] = [f"{name.replace('_', ' ')} {text[:20]!r} is not a whole number"]
        return None


def form_request(data: Any) -> dict[str, Any]:
    """The start form's values as ``session_create``'s keywords. A number that is not one is refused
    here, by field; a blank number takes the setting's value; every other check is the service's."""
    problems: dict[str, list[str]] = {}
    numbers = {name: _whole_number(str(data.get(name, "")).strip(), name, problems) for name in INT_FIELDS}
    if problems:
        raise InputRefused("; ".join(problem for values in problems.values() for problem in values), problems)
    fallback = defaults()
    symbols = data.getlist("symbols") if hasattr(data, "getlist") else list(data.get("symbols") or [])
    texts = [str(data.get(name, "")) for name in ("goal", "strategy", "proposer", "provider")] + list(map(str, symbols))
    if any("\x00" in text for text in texts):
        raise InputRefused("the form contains a NUL character; it cannot be stored")
    return {
        "goal": str(data.get("goal", "")).strip(),
        "strategy": str(data.get("strategy", "")).strip(),
        "symbols": [str(symbol).strip().upper() for symbol in symbols if str(symbol).strip()],
        "proposer": str(data.get("proposer", "")).strip(),
        "provider": str(data.get("provider", "")).strip(),
        "allow_code_gen": str(data.get("allow_code_gen", "")).strip().lower() in TRUE,
        **{name: fallback[name] if value is None else value for name, value in numbers.items()},
    }


def _check_sizes(params: Mapping[str, Any]) -> None:
    problems = {
        name: [f"{name.replace('_', ' ')} {value} is out of range (at most {MAX_COLUMN:,} either way)"]
        for name in INT_FIELDS
        if isinstance(value := params.get(name), int) and abs(value) > MAX_COLUMN
    }
    if problems:
        raise InputRefused("; ".join(problem for values in problems.values() for problem in values), problems)


def queue_session(session_id: int) -> None:
    """Send the session to a worker. A queue that cannot be reached leaves the session FAILED with
    the reason, not QUEUED forever with nobody to run it."""
    try:
        current_app.send_task(RUN_TASK, args=[session_id])
    except Exception as problem:  # the transports' connection errors have no common type
        log.warning("research session %s not queued: %s", session_id, problem)
        ResearchSession.objects.filter(pk=session_id, status=ResearchSession.Status.QUEUED).update(
            status=ResearchSession.Status.FAILED, error=f"not queued: the task queue is unreachable ({problem})"
        )


def session_start(*, params: Mapping[str, Any], user: Any) -> ResearchSession:
    """Check the permission, create the session (the service checks every value) and queue it
    once committed. A refusal creates nothing."""
    if not can_run(user):
        raise NotAllowed("starting a research session needs the approver or admin role")
    _check_sizes(params)
    with transaction.atomic():
        session = services.session_create(**params, user=user)
        transaction.on_commit(lambda: queue_session(session.pk))
    return session
