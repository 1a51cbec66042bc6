from django.urls import path

from trading import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("instruments/<str:symbol>/", views.instrument_detail, name="instrument_detail"),
]
