"""Admin pieces shared by the desk's apps. Lives in ``config`` so that ``agents`` and ``reviews``
can use it without importing ``trading``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

if TYPE_CHECKING:
    # The mixin always sits before ModelAdmin; this tells the checker what super() is.
    _AdminBase = admin.ModelAdmin[Model]
else:
    _AdminBase = object

# What ModelAdmin.get_actions maps each action's name to: (function, name, description).
_Actions = dict[str, tuple[Callable[..., str], str, str] | None]


class NoDeleteAdminMixin(_AdminBase):
    """The desk's history (theses, orders, fills, marks, runs, model calls, reviews, audit) must
    stay auditable, so the admin offers no way to delete it: no delete permission, hence no delete
    view, and no "Delete selected" bulk action."""

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def get_actions(self, request: HttpRequest) -> _Actions:
        # Django already hides actions the user lacks permission for; dropping it by name as well
        # keeps it gone even if a subclass grants delete permission by mistake.
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions


class HistoryAdmin(NoDeleteAdminMixin, admin.ModelAdmin):
    """Written by the desk's services only: the admin may look, never add, edit or delete."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False
