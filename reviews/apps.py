from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"

    def ready(self) -> None:
        from reviews import receivers  # noqa: F401 - answers the book's replay signals
