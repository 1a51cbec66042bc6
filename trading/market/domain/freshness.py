"""Whether an exchange's market data is behind its calendar: the latest stored bar against the
exchange's last completed session. Pure: the home page's banner and the health page's check both
read this verdict."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


@dataclass(frozen=True)
class Staleness:
    """The latest stored bar of an exchange against the exchange's last completed session."""

    exchange: str
    latest_bar: dt.date
    last_session: dt.date
    sessions_behind: int

    @property
    def text(self) -> str:
        sessions = "session" if self.sessions_behind == 1 else "sessions"
        return (
            f"Latest bar {self.latest_bar.isoformat()} is {self.sessions_behind} {sessions} old "
            f"(last session {self.last_session.isoformat()}) on {self.exchange}"
        )


def staleness(
    exchange: str, *, latest_bar: dt.date | None, last_session: dt.date, sessions_behind: int
) -> Staleness | None:
    """A stale verdict when the latest bar is older than the last completed session, else None."""
    if latest_bar is None or latest_bar >= last_session:
        return None
    return Staleness(
        exchange=exchange, latest_bar=latest_bar, last_session=last_session, sessions_behind=max(1, sessions_behind)
    )
