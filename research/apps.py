from django.apps import AppConfig


class ResearchConfig(AppConfig):
    name = "research"

    def ready(self) -> None:
        # Trading reads an attached signal's current value through its registry, never by importing
        # research (the layers point the other way): research installs its reader here.
        from research.desk_signals import read_signal
        from trading.market.research_signals import register_reader

        register_reader(read_signal)
