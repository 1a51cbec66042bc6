from django.urls import path

from trading import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("instruments/<str:symbol>/", views.instrument_detail, name="instrument_detail"),
    path("runs/", views.run_list, name="run_list"),
    path("runs/start/", views.run_start, name="run_start"),
    path("runs/<int:run_id>/", views.run_detail, name="run_detail"),
]
