from django.urls import path

from trading.consumers import DeskEventsConsumer, RunEventsConsumer

websocket_urlpatterns = [
    path("ws/events/", DeskEventsConsumer.as_asgi()),
    path("ws/runs/<int:run_id>/", RunEventsConsumer.as_asgi()),
]
