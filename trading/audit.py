from __future__ import annotations

from typing import Any

from trading.models.desk import AuditEvent


def audit_record(
    *,
    actor: Any = None,
    actor_label: str = "",
    action: str,
    target: str = "",
    reason: str = "",
    details: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one audit event. ``actor`` is a user or None for a command/task (name it in actor_label)."""
    user = actor if getattr(actor, "is_authenticated", False) else None
    label = actor_label or (user.get_username() if user else "system")
    return AuditEvent.objects.create(
        actor=user, actor_label=label, action=action, target=target, reason=reason, details=details or {}
    )
