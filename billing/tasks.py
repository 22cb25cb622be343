"""Billing's Celery tasks: thin interfaces that call one service each."""

from datetime import datetime

from celery import shared_task
from django.db import OperationalError

from portal.prometheus import PrometheusUnavailable
from portal.queueing import retry_policy

from .models import UsageRecord, WindowStatus
from .services import metering


@shared_task(**retry_policy(PrometheusUnavailable, OperationalError, max_retries=3))
def usage_meter_task(hour_iso: str) -> list[str]:
    """Meter one closed UTC hour (ISO 8601, e.g. 2026-03-01T10:00:00+00:00) from both sources,
    again if it was metered. A measured gap is recorded by the service, then retried here a few
    times; the hourly sweep takes it over after that."""
    windows = metering.usage_meter_hour(hour=datetime.fromisoformat(hour_iso))
    gaps = [w for w in windows if w.source == UsageRecord.Source.MEASURED
            and w.status == WindowStatus.GAP]
    if gaps:
        raise PrometheusUnavailable(gaps[0].last_error)
    return [f"{w.source} {w.status}" for w in windows]


# Periodic and retried only a few times: the next hourly run comes soon and looks back anyway.
@shared_task(**retry_policy(OperationalError, max_retries=3))
def usage_meter_sweep_task() -> int:
    """Hourly (beat "billing-meter-hourly"): meter every closed hour not done yet, gaps
    included. Returns how many windows became done."""
    return metering.usage_meter_due()
