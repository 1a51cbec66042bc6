from __future__ import annotations

from django.contrib.auth.middleware import LoginRequiredMiddleware
from rest_framework.views import APIView


class DeskLoginRequiredMiddleware(LoginRequiredMiddleware):
    """Every page needs a login. API views are left to DRF, which answers 401/403 in JSON and
    also accepts token authentication (which this middleware cannot see)."""

    def process_view(self, request, view_func, view_args, view_kwargs):
        view_class = getattr(view_func, "cls", None)
        if isinstance(view_class, type) and issubclass(view_class, APIView):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)
