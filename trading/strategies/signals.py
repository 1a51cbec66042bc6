"""What a strategy run announces, for the layer above trading (reviews: the critique) to act on
without trading importing it. The critique's verdict comes back as data trading owns: the
``StrategyRun.critique_*`` fields and ``StrategyDirective`` rows."""

from __future__ import annotations

from django.dispatch import Signal

# Sent with ``strategy_run`` (just created, its pipeline runs not started yet) and ``replay`` (bool),
# inside the transaction that created it. A receiver decides whether the run is critiqued and says
# so on the row (``critique_decision``, ``critique_reason``, ``critique_state``). A live run whose
# critique is then ``pending`` waits for it, at most ``settings.CRITIQUE["DEADLINE_SECONDS"]``; a
# replay's critique has run by the time the receiver returns.
strategy_run_opened = Signal()
# Sent with ``strategy`` when a replay starts again from a clean account: whatever the layers above
# keep about that strategy's replay (its critiques) goes with the replay's runs and directives.
replay_cleared = Signal()
