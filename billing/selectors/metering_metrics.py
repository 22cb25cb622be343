"""`portal_metering_last_hour_timestamp_seconds`: the end of the latest hour metering recorded
(the allocated source's latest done window, what invoices bill), read at scrape time, so an
alert sees metering stall whichever process serves /metrics."""

from __future__ import annotations

import logging
from datetime import datetime

from prometheus_client.core import GaugeMetricFamily

from ..calculations.money import HOUR
from ..models import MeteringWindow, UsageRecord, WindowStatus

logger = logging.getLogger(__name__)


def metering_last_hour_end() -> datetime | None:
    """The end of the latest allocated hour metered (None before any)."""
    latest = (
        MeteringWindow.objects.filter(
            source=UsageRecord.Source.ALLOCATED, status=WindowStatus.DONE
        )
        .order_by("-hour").values_list("hour", flat=True).first()
    )
    return None if latest is None else latest + HOUR


class MeteringLastHourCollector:
    """Absent until an hour is metered, and while the database cannot be read."""

    def family(self) -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "portal_metering_last_hour_timestamp_seconds",
            "Unix time at the end of the latest hour metered (allocated source).",
        )

    def describe(self):  # registering reads nothing
        yield self.family()

    def collect(self):
        try:
            end = metering_last_hour_end()
        except Exception:  # /metrics still answers; readiness reports the database
            logger.warning("Could not read the last metered hour", exc_info=True)
            return
        if end is None:
            return
        family = self.family()
        family.add_metric([], end.timestamp())
        yield family
