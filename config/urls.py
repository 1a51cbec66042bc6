from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from security.tokens import TokenObtainView

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/auth/token/", TokenObtainView.as_view(), name="api-token"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves its start-up script as a file: the Content-Security-Policy runs no inline script.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/", include("trading.api_urls")),
    path("api/", include("reviews.api_urls")),
    path("api/", include("research.api_urls")),
    path("reviews/", include("reviews.urls")),
    path("research/", include("research.urls")),
    path("", include("trading.urls")),
]
