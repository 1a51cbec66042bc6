"""Strategy schedules: five-field cron expressions read in the desk's time zone."""

from __future__ import annotations

import datetime as dt

from celery.schedules import crontab


def schedule_of(strategy, *, now: dt.datetime | None = None) -> crontab:
    """A five-field cron expression (minute hour day-of-month month day-of-week), desk time zone."""
    fields = strategy.schedule.split()
    if len(fields) != 5:
        raise ValueError(f"schedule {strategy.schedule!r} is not a five-field cron expression")
    minute, hour, day_of_month, month, day_of_week = fields
    return crontab(
        minute=minute,
        hour=hour,
        day_of_month=day_of_month,
        month_of_year=month,
        day_of_week=day_of_week,
        nowfun=(lambda: now) if now else None,
    )
