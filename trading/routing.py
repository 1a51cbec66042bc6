from django.urls import path

from trading.consumers import DeskEventsConsumer

websocket_urlpatterns = [path("ws/events/", DeskEventsConsumer.as_asgi())]
