"""Admin pieces shared by the desk's apps. Lives in ``config`` so that ``agents`` and ``reviews``
can use it without importing ``trading``."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest


class NoDeleteAdminMixin:
    """The desk's history (theses, orders, fills, marks, runs, model calls, reviews, audit) must
    stay auditable, so the admin offers no way to delete it: no delete permission, hence no delete
    view, and no "Delete selected" bulk action."""

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def get_actions(self, request: HttpRequest) -> dict:
        # Django already hides actions the user lacks permission for; dropping it by name as well
        # keeps it gone even if a subclass grants delete permission by mistake.
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions


class HistoryAdmin(NoDeleteAdminMixin, admin.ModelAdmin):
    """Written by the desk's services only: the admin may look, never add, edit or delete."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False
