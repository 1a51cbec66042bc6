"""The desk's roles as Django groups with real permissions.

viewer   reads everything;
approver reads everything, decides on theses, starts runs and research sessions, and imports
         market data (the commands and the browser upload);
admin    all of that, and manages users in the admin.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import transaction

VIEWER, APPROVER, ADMIN = "viewer", "approver", "admin"

_READ_APPS = ("trading", "agents", "reviews", "research")


def _read_permissions() -> list[Permission]:
    return list(Permission.objects.filter(content_type__app_label__in=_READ_APPS, codename__startswith="view_"))


def _desk_permissions(*codenames: str) -> list[Permission]:
    return list(Permission.objects.filter(content_type__app_label="trading", codename__in=codenames))


@transaction.atomic
def ensure_desk_groups() -> dict[str, Group]:
    """Create or refresh the three groups. Safe to call any number of times."""
    read = _read_permissions()
    approve = _desk_permissions("approve_thesis", "start_run", "import_market_data") + list(
        Permission.objects.filter(content_type__app_label="research", codename="run_research")
    )
    admin_extra = list(Permission.objects.filter(content_type__app_label__in=("auth", *_READ_APPS)))
    wanted = {VIEWER: read, APPROVER: read + approve, ADMIN: read + approve + admin_extra}
    groups: dict[str, Group] = {}
    for name, permissions in wanted.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.set(permissions)
        groups[name] = group
    return groups


@dataclass(frozen=True)
class DemoLogin:
    username: str
    password: str | None  # None when the user already existed and its password was left alone
    role: str


DEMO_USERS = (("viewer", VIEWER), ("approver", APPROVER), ("admin", ADMIN))


@transaction.atomic
def create_demo_users(*, reset_passwords: bool = False) -> list[DemoLogin]:
    """Create one user per role. A new or reset password is returned once and stored only hashed."""
    groups = ensure_desk_groups()
    user_model = get_user_model()
    logins = []
    for username, role in DEMO_USERS:
        user, created = user_model.objects.get_or_create(username=username)
        password = None
        if created or reset_passwords:
            password = secrets.token_urlsafe(9)
            user.set_password(password)
        user.is_staff = role == ADMIN
        user.is_superuser = role == ADMIN
        user.save()
        user.groups.set([groups[role]])
        logins.append(DemoLogin(username=username, password=password, role=role))
    return logins
