from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required, login_required
from django.contrib.staticfiles import finders
from django.http import FileResponse, Http404, HttpRequest
from django.urls import include, path
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from security.tokens import TokenObtainView
from security.views import LogoutView


@login_not_required
@require_safe
@cache_control(public=True, max_age=7 * 24 * 3600)
def favicon(request: HttpRequest) -> FileResponse:
    """/favicon.ico, which browsers and feed readers ask for whatever the page links: static/favicon.ico."""
    found = finders.find("favicon.ico")
    if not found:
        raise Http404("no favicon.ico among the static files")
    return FileResponse(open(found if isinstance(found, str) else found[0], "rb"), content_type="image/x-icon")


urlpatterns = [
    path("favicon.ico", favicon, name="favicon"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/auth/token/", TokenObtainView.as_view(), name="api-token"),
    # The schema is for API clients: without credentials it answers 401 like the rest of the API.
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The docs are a page for a person: an anonymous visitor is sent to log in and comes back here.
    # The split view serves its start-up script as a file: the Content-Security-Policy runs no inline script.
    path(
        "api/docs/",
        login_required(SpectacularSwaggerSplitView.as_view(url_name="api-schema")),
        name="api-docs",
    ),
    path("api/", include("trading.api_urls")),
    path("api/", include("reviews.api_urls")),
    path("api/", include("research.api_urls")),
    path("reviews/", include("reviews.urls")),
    path("research/", include("research.urls")),
    path("", include("trading.urls")),
]
