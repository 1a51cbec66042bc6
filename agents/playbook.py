"""The PLAYBOOK: the heuristics the agents cite, read and changed here.

- ``active_playbook`` is what a run shows its agents and checks their citations against (one query;
  the pipeline keeps it in the run's context stage, so a resumed run reads the same rules).
- ``propose_candidate`` adds a candidate rule (a retrospective's proposal, or a person's) under the
  next free code; a person activates it.
- ``set_status`` moves a rule between active, candidate, demoted and retired, with who and why in
  its history.

Every change is kept by ``simple_history`` (who, when, why). The desk's audit log is ``trading``'s,
which this layer may not import: a caller that can (``reviews.playbook``, the admin's API) passes an
``audit`` callback, and the change and its audit record are written in one transaction.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol

from django.db import IntegrityError, transaction

from agents.domain.playbook import PlaybookRule
from agents.models import Heuristic
from vocabulary.refusals import InputRefused, StateConflict

__all__ = [
    "DEMO_PLAYBOOK",
    "STATUSES",
    "AuditHook",
    "active_playbook",
    "heuristic_edit",
    "next_code",
    "propose_candidate",
    "seed_demo_playbook",
    "set_status",
]

STATUSES: tuple[str, ...] = tuple(Heuristic.Status.values)
MAX_TEXT = 2000
MAX_REASON = 100  # simple_history's change-reason column
_CREATE_ATTEMPTS = 5  # two proposals racing for the same next code: the loser takes the one after


class AuditHook(Protocol):
    """``trading.audit.audit_record``'s shape, as far as the playbook uses it."""

    def __call__(
        self,
        *,
        actor: Any = ...,
        action: str,
        target: str = ...,
        reason: str = ...,
        details: dict[str, Any] | None = ...,
    ) -> object: ...


def active_playbook() -> list[PlaybookRule]:
    """The active rules in code order (H-2 before H-10): what a run shows its agents. One query."""
    rows = Heuristic.objects.filter(status=Heuristic.Status.ACTIVE).values_list("code", "text", "factor")
    rules = [PlaybookRule(code=code, text=" ".join(text.split()), factor=factor) for code, text, factor in rows]
    return sorted(rules, key=lambda rule: int(rule.code.removeprefix("H-")))


def next_code() -> str:
    """``H-<n+1>`` for the highest number in use (retired and candidate codes are never reused)."""
    numbers = (code.removeprefix("H-") for code in Heuristic.objects.values_list("code", flat=True))
    highest = max((int(number) for number in numbers if number.isdigit()), default=0)
    return f"H-{highest + 1}"


def _clean_text(text: str) -> str:
    cleaned = " ".join(str(text or "").split())
    if not cleaned:
        raise InputRefused("a heuristic needs its text: say the rule in words", {"text": "this field is required"})
    if len(cleaned) > MAX_TEXT:
        raise InputRefused(
            f"a heuristic's text is at most {MAX_TEXT} characters; this one has {len(cleaned)}",
            {"text": f"at most {MAX_TEXT} characters"},
        )
    return cleaned


def _clean_factor(factor: str) -> str:
    cleaned = " ".join(str(factor or "").split()).lower()
    limit = Heuristic._meta.get_field("factor").max_length or 32
    if len(cleaned) > limit:
        raise InputRefused(f"a factor is at most {limit} characters", {"factor": f"at most {limit} characters"})
    return cleaned


def propose_candidate(
    *, text: str, origin: str, factor: str = "", user: Any = None, audit: AuditHook | None = None
) -> Heuristic:
    """A candidate rule under the next free code, waiting for a person to activate it. The same text
    (spaces and case aside) as a rule already in the playbook in any status returns that rule
    instead of a duplicate. Empty text is refused (``InputRefused``) and nothing is written."""
    cleaned, chosen_factor = _clean_text(text), _clean_factor(factor)
    for existing in Heuristic.objects.filter(text__iexact=cleaned).order_by("pk")[:1]:
        return existing
    for _ in range(_CREATE_ATTEMPTS):
        try:
            with transaction.atomic():
                heuristic = Heuristic(
                    code=next_code(),
                    text=cleaned,
                    factor=chosen_factor,
                    status=Heuristic.Status.CANDIDATE,
                    origin=str(origin or "")[:200],
                )
                _stamp(heuristic, user, f"proposed ({heuristic.origin or 'no origin given'})")
                heuristic.save()
                if audit is not None:
                    audit(
                        actor=user,
                        action="heuristic_proposed",
                        target=heuristic.code,
                        reason=heuristic.origin,
                        details={"text": cleaned, "factor": chosen_factor},
                    )
                return heuristic
        except IntegrityError:
            continue  # another proposal took this code a moment ago: try the next one
    raise StateConflict("could not find a free heuristic code; try again")


def set_status(
    heuristic: Heuristic,
    status: str,
    *,
    user: Any,
    reason: str,
    audit: AuditHook | None = None,
    allowed_from: Collection[str] | None = None,
) -> Heuristic:
    """Move ``heuristic`` to ``status`` (active, candidate, demoted, retired), saying why. A status
    it already has, or (with ``allowed_from``) one it may not be moved from, is a state conflict,
    checked under a lock on the row; an unknown status or an empty reason is refused."""
    if status not in STATUSES:
        raise InputRefused(
            f"{status!r} is not a heuristic status; choose one of {', '.join(STATUSES)}",
            {"status": f"one of {', '.join(STATUSES)}"},
        )
    why = " ".join(str(reason or "").split())
    if not why:
        raise InputRefused("say why the heuristic's status changes: a reason is required", {"reason": "required"})
    with transaction.atomic():
        current = Heuristic.objects.select_for_update().get(pk=heuristic.pk)
        if current.status == status:
            raise StateConflict(f"{current.code} is already {status}")
        if allowed_from is not None and current.status not in allowed_from:
            raise StateConflict(
                f"{current.code} is {current.status}: only a {' or '.join(sorted(allowed_from))} heuristic "
                f"can be made {status}"
            )
        before = current.status
        current.status = status
        _stamp(current, user, why)
        current.save(update_fields=["status", "updated_at"])
        if audit is not None:
            audit(
                actor=user,
                action="heuristic_status_changed",
                target=current.code,
                reason=why,
                details={"from": before, "to": status},
            )
    return current


def heuristic_edit(
    heuristic: Heuristic,
    *,
    user: Any,
    reason: str,
    text: str | None = None,
    factor: str | None = None,
    status: str | None = None,
    audit: AuditHook | None = None,
) -> Heuristic:
    """Change a rule's text, factor and/or status in one step, saying why (the admins' API)."""
    why = " ".join(str(reason or "").split())
    if not why:
        raise InputRefused("say why the heuristic changes: a reason is required", {"reason": "required"})
    if status is not None and status not in STATUSES:
        raise InputRefused(
            f"{status!r} is not a heuristic status; choose one of {', '.join(STATUSES)}",
            {"status": f"one of {', '.join(STATUSES)}"},
        )
    changes: dict[str, Any] = {}
    if text is not None:
        changes["text"] = _clean_text(text)
    if factor is not None:
        changes["factor"] = _clean_factor(factor)
    if status is not None:
        changes["status"] = status
    with transaction.atomic():
        current = Heuristic.objects.select_for_update().get(pk=heuristic.pk)
        changed = {name: value for name, value in changes.items() if getattr(current, name) != value}
        if not changed:
            raise StateConflict(f"{current.code} already reads so: nothing to change")
        before = {name: getattr(current, name) for name in changed}
        for name, value in changed.items():
            setattr(current, name, value)
        _stamp(current, user, why)
        current.save(update_fields=[*changed, "updated_at"])
        if audit is not None:
            audit(
                actor=user,
                action="heuristic_edited",
                target=current.code,
                reason=why,
                details={"before": before, "after": changed},
            )
    return current


def _stamp(heuristic: Heuristic, user: Any, reason: str) -> None:
    """Who and why, for the history row ``simple_history`` writes on save."""
    heuristic._history_user = user if getattr(user, "is_authenticated", False) else None  # type: ignore[attr-defined]
    heuristic._change_reason = reason[:MAX_REASON]  # type: ignore[attr-defined]


# --- the demo playbook ---------------------------------------------------------------------------

# (code, factor, text): one rule per factor the offline rules read, so the demo's runs cite them
# and the audit has data from the first day. Each factor is a name in agents.domain.playbook.FACTORS.
DEMO_PLAYBOOK: tuple[tuple[str, str, str], ...] = (
    (
        "H-1",
        "trend",
        "Trade with the trend: buy when the close holds above its moving averages and the 20/50/200 stack "
        "points up; do not buy below a falling SMA200.",
    ),
    (
        "H-2",
        "macd",
        "Let momentum confirm the side: want the MACD histogram on the trade's side of zero before entering.",
    ),
    (
        "H-3",
        "rsi",
        "Do not chase a stretched move: above RSI(14) 70 a long waits for a pullback; under 30 a short waits "
        "for a bounce.",
    ),
    (
        "H-4",
        "levels",
        "Enter with room to run: a long wants more distance to resistance than to support (a short, the "
        "reverse); a close through support cancels a long.",
    ),
    (
        "H-5",
        "news",
        "Company news outranks market news: weigh results, ratings and guidance above macro headlines, and "
        "act on news tone only when several stories agree.",
    ),
    (
        "H-6",
        "valuation",
        "Do not pay any price for a story: a rich multiple needs growth behind it, a cheap one a reason it is cheap.",
    ),
    (
        "H-7",
        "dissent",
        "A split panel earns a smaller stake: when a voting analyst opposes the winner, lower the "
        "conviction rather than raise the argument.",
    ),
    (
        "H-8",
        "volatility",
        "Let volatility set the stop: two ATR(14) from the entry, the target at twice the risk; never "
        "tighten a stop to buy more shares.",
    ),
)


def seed_demo_playbook(rules: Sequence[tuple[str, str, str]] = DEMO_PLAYBOOK) -> int:
    """Write the demo playbook's rules that are missing, active, and return how many were written.
    A code already present is left as it is (edited, demoted or retired by a person since)."""
    present = set(Heuristic.objects.filter(code__in=[code for code, _, _ in rules]).values_list("code", flat=True))
    written = 0
    for code, factor, text in rules:
        if code in present:
            continue
        heuristic = Heuristic(code=code, text=text, factor=factor, status=Heuristic.Status.ACTIVE, origin="seed")
        _stamp(heuristic, None, "seeded with the demo")
        heuristic.save()
        written += 1
    return written
