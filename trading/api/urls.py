from django.urls import path

from trading.api import views
from trading.views_health import HealthApi

urlpatterns = [
    path("health/", HealthApi.as_view(), name="api-health"),
    path("instruments/", views.InstrumentListApi.as_view(), name="api-instruments"),
    path("instruments/<str:symbol>/", views.InstrumentDetailApi.as_view(), name="api-instrument"),
    path("instruments/<str:symbol>/bars/", views.BarListApi.as_view(), name="api-bars"),
    path("instruments/<str:symbol>/features/", views.FeatureBundleApi.as_view(), name="api-features"),
    path("runs/", views.RunListApi.as_view(), name="api-runs"),
    path("runs/<int:run_id>/", views.RunDetailApi.as_view(), name="api-run"),
    path("theses/", views.ThesisListApi.as_view(), name="api-theses"),
    path("theses/<int:thesis_id>/", views.ThesisDetailApi.as_view(), name="api-thesis"),
    path("theses/<int:thesis_id>/approve/", views.ThesisApproveApi.as_view(), name="api-thesis-approve"),
    path("theses/<int:thesis_id>/reject/", views.ThesisRejectApi.as_view(), name="api-thesis-reject"),
    path("positions/", views.PositionListApi.as_view(), name="api-positions"),
    path("positions/<int:position_id>/close/", views.PositionCloseApi.as_view(), name="api-position-close"),
]
