from django.urls import path

from trading.api import views

urlpatterns = [
    path("instruments/", views.InstrumentListApi.as_view(), name="api-instruments"),
    path("instruments/<str:symbol>/", views.InstrumentDetailApi.as_view(), name="api-instrument"),
    path("instruments/<str:symbol>/bars/", views.BarListApi.as_view(), name="api-bars"),
    path("instruments/<str:symbol>/features/", views.FeatureBundleApi.as_view(), name="api-features"),
    path("runs/", views.RunListApi.as_view(), name="api-runs"),
    path("runs/<int:run_id>/", views.RunDetailApi.as_view(), name="api-run"),
]
