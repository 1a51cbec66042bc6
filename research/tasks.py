"""The research app's Celery task: run one queued session.

Takes the session's id, re-reads the row and calls the service. Safe to deliver twice: the service
claims the session (QUEUED → RUNNING) in one conditional update, so a second delivery finds it
claimed and returns. A research session may run far longer than a pipeline stage, so the task has
its own time limits (``RESEARCH["TASK_TIME_LIMIT"]``, two hours by default) instead of the desk's.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.conf import settings

from research.models import ResearchSession
from research.services import session_run

__all__ = ["run_session"]

TIME_LIMIT = int(settings.RESEARCH.get("TASK_TIME_LIMIT", 7200))  # type: ignore[call-overload]


@shared_task(name="research.run_session", acks_late=True, soft_time_limit=TIME_LIMIT, time_limit=TIME_LIMIT + 60)
def run_session(session_id: int) -> dict[str, Any]:
    """Run the queued session ``session_id`` to its end; a gone or already-claimed one is left alone."""
    if not ResearchSession.objects.filter(pk=session_id).exists():
        return {"status": "gone", "session_id": session_id}
    session = session_run(session_id)
    return {
        "status": session.status,
        "session_id": session_id,
        "trials": session.trials.count(),
        "stop_reason": session.stop_reason,
    }
