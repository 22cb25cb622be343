"""Hourly metering from two sources into usage records, each window re-runnable.

A window is one source's UTC hour. Metering it reads the source, then in one transaction
replaces the hour's records of that source (delete, then insert) and marks the window done, so
metering it again never counts twice and absorbs whatever arrived late. Two runs of the same
window queue on its row lock.

- `allocated` (`metering_allocated`): what every workload held, from its lifecycle events.
- `measured` (`metering_measured`): what the GPUs were seen doing, from DCGM series in
  Prometheus, each host-hour capped by the host's GPUs in the inventory (`metering_caps`:
  what was capped is a `MeteringFlag`); with the OpenCost cross-check, compared with the
  hour's allocated GPU-seconds as they are stored when the measured window is metered
  (`usage_meter_hour` meters allocated first).

When Prometheus cannot answer, the measured window becomes a GAP with the error: its records
stay as they were (none, or those of an earlier run), never silently zero, and the sweep
(`usage_meter_due`) meters it again. The sweep covers every hour of the open billing periods
(last month, any older month with a draft invoice), not only the look-back: an invoice is
never issued over hours left unmetered (`selectors.metering_gaps`). Without PROMETHEUS_URL,
measured metering is off: the sweep and `usage_meter_hour` skip it (no window rows: nothing
is pending), and only a direct `usage_meter_window(source="measured")` records a gap that says why.

Every window metered is one audit event (system actor, or the admin who asked); a gap is
audited when a window becomes one, not at every retry.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Sum
from django.utils import timezone

from core.audit import audit
from core.errors import RuleViolation
from core.prometheus import PrometheusClient, PrometheusError, PrometheusUnavailable
from tenants.models import Tenant

from ..calculations.money import HOUR, floor_hour
from ..models import (
    CrossCheck,
    Invoice,
    InvoiceStatus,
    MeteringWindow,
    UsageRecord,
    WindowStatus,
)
from .metering_allocated import allocated_rows, allocated_usage
from .metering_allocated_sql import allocated_insert
from .metering_caps import measured_capped, measured_flags_replace
from .metering_clusters import COPIES, with_copies
from .metering_measured import Measurement, cross_checks, measure_hour

logger = logging.getLogger(__name__)

ALLOCATED = UsageRecord.Source.ALLOCATED
MEASURED = UsageRecord.Source.MEASURED
NOT_CONFIGURED = "PROMETHEUS_URL is not set: measured metering is off."
GPU_PREFIX = "gpu:"


def _hour(value: datetime, *, now: datetime) -> datetime:
    """`value` as a closed UTC hour, or a clear error."""
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise ValidationError({"hour": ["Give the hour as a timezone-aware datetime (UTC)."]})
    value = value.astimezone(UTC)
    if value != floor_hour(value):
        raise ValidationError({"hour": [f"{value.isoformat()} is not the start of an hour."]})
    if value + HOUR > now:
        raise RuleViolation(f"The hour from {value:%Y-%m-%d %H}:00 UTC has not ended yet.")
    return value


COPIED_FIELDS = ("tenant_id", "workload_id", "hostname", "source", "resource", "hour",
                 "unit_seconds", "busy_seconds", "metered_at")
Row = tuple  # a usage record's values, in COPIED_FIELDS order
UNIT_SECONDS = COPIED_FIELDS.index("unit_seconds")
HOUR_FIELD = COPIED_FIELDS.index("hour")


def _insert(records: list[UsageRecord]) -> None:
    _write_rows([tuple(getattr(record, name) for name in COPIED_FIELDS) for record in records])


def _write_rows(rows: list[Row]) -> None:
    """Write new usage records, each with what it copies (cluster, launcher, label): with
    PostgreSQL's COPY (the same constraints, a fraction of an INSERT's cost), or bulk_create."""
    if not rows:
        return
    rows, fields = with_copies(rows), (*COPIED_FIELDS, *COPIES)
    if connection.vendor != "postgresql":
        UsageRecord.objects.bulk_create(
            [UsageRecord(**dict(zip(fields, row, strict=True))) for row in rows],
            batch_size=2000,
        )
        return
    columns = ", ".join(UsageRecord._meta.get_field(name).column for name in fields)
    table = connection.ops.quote_name(UsageRecord._meta.db_table)
    with connection.cursor() as cursor, cursor.cursor.copy(
        f"COPY {table} ({columns}) FROM STDIN"
    ) as copy:
        for row in rows:
            copy.write_row(row)


def _locked_window(source: str, hour: datetime) -> MeteringWindow:
    window, _ = MeteringWindow.objects.get_or_create(source=source, hour=hour)
    return MeteringWindow.objects.select_for_update().get(pk=window.pk)


def _replace(
    source: str, hour: datetime, records: list[UsageRecord], *, actor: Any | None,
    details: dict[str, Any],
) -> MeteringWindow:
    """Store the hour's records of `source` in place of the ones it had; the window is done."""
    window = _locked_window(source, hour)
    before = {"status": window.status, "records": window.records,
              "unit_seconds": window.unit_seconds}
    UsageRecord.objects.filter(source=source, hour=hour).delete()
    _insert(records)
    window.status = WindowStatus.DONE
    window.attempts += 1
    window.last_error = ""
    window.records = len(records)
    window.unit_seconds = sum(record.unit_seconds for record in records)
    window.metered_at = timezone.now()
    window.save()
    audit(actor=actor, action="usage.meter", obj=window, changes={
        "source": source, "hour": hour.isoformat(), "before": before,
        "records": window.records, "unit_seconds": window.unit_seconds, **details,
    })
    return window


@transaction.atomic
def _record_gap(source: str, hour: datetime, error: str, *, actor: Any | None) -> MeteringWindow:
    window = _locked_window(source, hour)
    became_gap = window.status != WindowStatus.GAP
    window.status = WindowStatus.GAP
    window.attempts += 1
    window.last_error = error[:2000]
    window.save(update_fields=["status", "attempts", "last_error"])
    logger.warning("Metering %s %s is a gap: %s", source, hour.isoformat(), error)
    if became_gap or actor is not None:
        audit(actor=actor, action="usage.meter_gap", obj=window,
              changes={"source": source, "hour": hour.isoformat(), "error": window.last_error})
    return window


@transaction.atomic
def _meter_allocated(hour: datetime, *, actor: Any | None) -> MeteringWindow:
    now = timezone.now()
    records = [
        UsageRecord(tenant_id=u.tenant_id, workload_id=u.workload_id, source=ALLOCATED,
                    resource=u.resource, hour=hour, unit_seconds=u.unit_seconds, metered_at=now)
        for u in allocated_usage(hour=hour)
    ]
    return _replace(ALLOCATED, hour, records, actor=actor,
                    details={"workloads": len({r.workload_id for r in records})})


def _tenant_namespaces() -> dict[str, int]:
    return {t.namespace: t.pk for t in Tenant.objects.only("pk", "slug")}


def _allocated_gpu_seconds(hour: datetime) -> dict[int, int]:
    rows = (
        UsageRecord.objects.filter(source=ALLOCATED, hour=hour, resource__startswith=GPU_PREFIX)
        .values("tenant_id").annotate(seconds=Sum("unit_seconds")).order_by()
    )
    return {row["tenant_id"]: int(row["seconds"]) for row in rows}


@transaction.atomic
def _store_measured(hour: datetime, measurement: Measurement, *,
                    actor: Any | None) -> MeteringWindow:
    now = timezone.now()
    usage, capped = measured_capped({hour: measurement.usage})
    measured_flags_replace(hours=[hour], capped=capped)
    records = [
        UsageRecord(tenant_id=u.tenant_id, hostname=u.hostname, source=MEASURED,
                    resource=u.resource, hour=hour, unit_seconds=u.unit_seconds,
                    busy_seconds=u.busy_seconds, metered_at=now)
        for u in usage[hour]
    ]
    details: dict[str, Any] = {
        "busy_seconds": sum(r.busy_seconds for r in records),
        "unattributed_seconds": measurement.unattributed_seconds,
    }
    if capped:
        details["capped_hosts"] = sorted(cap.hostname for cap in capped)
        logger.warning("Measured GPU time above the inventory's GPUs on %s at %s: capped",
                       details["capped_hosts"], hour.isoformat())
    CrossCheck.objects.filter(hour=hour).delete()
    if measurement.opencost is not None:
        checks = cross_checks(
            allocated=_allocated_gpu_seconds(hour), opencost=measurement.opencost,
            threshold=settings.METERING_OPENCOST_THRESHOLD_PERCENT,
        )
        CrossCheck.objects.bulk_create(
            CrossCheck(tenant_id=c.tenant_id, hour=hour, portal_gpu_seconds=c.portal_gpu_seconds,
                       opencost_gpu_seconds=c.opencost_gpu_seconds,
                       difference_percent=c.difference_percent, flagged=c.flagged,
                       checked_at=now)
            for c in checks
        )
        flagged = [c.tenant_id for c in checks if c.flagged]
        details |= {"cross_checks": len(checks), "cross_checks_flagged": len(flagged)}
        if flagged:
            logger.warning("OpenCost disagrees with the allocated GPU-seconds of %s at %s "
                           "by more than %s %%", flagged, hour.isoformat(),
                           settings.METERING_OPENCOST_THRESHOLD_PERCENT)
    return _replace(MEASURED, hour, records, actor=actor, details=details)


def _prometheus() -> PrometheusClient | None:
    if not settings.PROMETHEUS_URL:
        return None
    return PrometheusClient(base_url=settings.PROMETHEUS_URL,
                            timeout=settings.PROMETHEUS_TIMEOUT)


def _meter_measured(hour: datetime, *, actor: Any | None) -> MeteringWindow:
    client = _prometheus()
    if client is None:
        return _record_gap(MEASURED, hour, NOT_CONFIGURED, actor=actor)
    # Prometheus is read before any transaction opens: no lock is held across the network.
    try:
        measurement = measure_hour(client=client, hour=hour,
                                   step=settings.METERING_STEP_SECONDS,
                                   namespaces=_tenant_namespaces())
    except PrometheusError as exc:
        return _record_gap(MEASURED, hour, f"{type(exc).__name__}: {exc}", actor=actor)
    finally:
        client.close()
    return _store_measured(hour, measurement, actor=actor)


def usage_meter_window(
    *, source: str, hour: datetime, actor: Any | None = None
) -> MeteringWindow:
    """Meter one source's closed UTC hour (again): its records replaced, the window done — or,
    for `measured` with Prometheus unable to answer, a gap with the error and no record
    touched."""
    hour = _hour(hour, now=timezone.now())
    if source == ALLOCATED:
        return _meter_allocated(hour, actor=actor)
    if source == MEASURED:
        return _meter_measured(hour, actor=actor)
    raise ValidationError({"source": [f"Pick one of: {', '.join(UsageRecord.Source.values)}."]})


def usage_meter_measurement(
    *, hour: datetime, measurement: Measurement, actor: Any | None = None
) -> MeteringWindow:
    """Store what was measured for a closed hour as its measured window (records replaced,
    OpenCost cross-checked), exactly as a reading from Prometheus is: the demo feeds it the
    series it generates."""
    return _store_measured(_hour(hour, now=timezone.now()), measurement, actor=actor)


def _span(start: datetime, end: datetime) -> list[datetime]:
    now = timezone.now()
    first, last = _hour(start, now=now), _hour(end - HOUR, now=now) if end > start else None
    if last is None:
        raise ValidationError({"end": ["The span ends after it starts."]})
    return [first + HOUR * n for n in range(int((last - first) / HOUR) + 1)]


def _copy_counted(rows: list[Row]) -> dict[datetime, tuple[int, int]]:
    """Write `rows`; their (records, unit-seconds) per hour."""
    _write_rows(rows)
    per_hour: dict[datetime, tuple[int, int]] = {}
    for row in rows:
        records, seconds = per_hour.get(row[HOUR_FIELD], (0, 0))
        per_hour[row[HOUR_FIELD]] = (records + 1, seconds + row[UNIT_SECONDS])
    return per_hour


def _replace_span(
    source: str, hours: list[datetime], write: Callable[[], dict[datetime, tuple[int, int]]],
    *, actor: Any | None, details: dict[str, Any],
) -> int:
    """Store the records of `source` for whole hours in place of the ones they had (`write`
    writes them once the old ones are gone, and says how many per hour); every hour's window
    done. The windows' rows are locked in hour order, as single windows lock theirs, so a span
    and an hourly run queue rather than deadlock."""
    start, end = hours[0], hours[-1] + HOUR
    MeteringWindow.objects.bulk_create(
        [MeteringWindow(source=source, hour=hour) for hour in hours], ignore_conflicts=True
    )
    windows = list(
        MeteringWindow.objects.select_for_update()
        .filter(source=source, hour__gte=start, hour__lt=end).order_by("hour")
    )
    UsageRecord.objects.filter(source=source, hour__gte=start, hour__lt=end).delete()
    per_hour = write()
    # The locked windows are written anew (one delete, one insert: far cheaper than an update
    # per row), each keeping its count of attempts.
    now = timezone.now()
    MeteringWindow.objects.filter(pk__in=[window.pk for window in windows]).delete()
    MeteringWindow.objects.bulk_create(
        [
            MeteringWindow(
                source=source, hour=window.hour, status=WindowStatus.DONE, last_error="",
                metered_at=now, attempts=window.attempts + 1,
                records=per_hour.get(window.hour, (0, 0))[0],
                unit_seconds=per_hour.get(window.hour, (0, 0))[1],
            )
            for window in windows
        ],
        batch_size=1000,
    )
    records = sum(count for count, _ in per_hour.values())
    audit(actor=actor, action="usage.meter_span", changes={
        "source": source, "start": start.isoformat(), "end": end.isoformat(),
        "hours": len(hours), "records": records,
        "unit_seconds": sum(seconds for _, seconds in per_hour.values()), **details,
    })
    return records


@transaction.atomic
def usage_meter_span(*, start: datetime, end: datetime, actor: Any | None = None) -> int:
    """Meter the allocated source over whole closed hours [start, end) at once (a catch-up
    after a long outage, the demo's past, the bench): the same records as hour by hour. On
    PostgreSQL one INSERT ... SELECT computes and writes them (`metering_allocated_sql`);
    elsewhere the histories are read in two queries and the records written in bulk. Returns
    how many records were written."""
    hours = _span(start, end)
    first, last = hours[0], hours[-1] + HOUR
    now = timezone.now()

    def write() -> dict[datetime, tuple[int, int]]:
        if connection.vendor == "postgresql":
            return allocated_insert(start=first, end=last, now=now)[0]
        return _copy_counted([
            (tenant_id, workload_id, "", ALLOCATED, resource, hour, seconds, 0, now)
            for hour, tenant_id, workload_id, resource, seconds in allocated_rows(
                start=first, end=last
            )
        ])

    return _replace_span(ALLOCATED, hours, write, actor=actor, details={})


@transaction.atomic
def usage_meter_measurements(
    *, measurements: Mapping[datetime, Measurement], actor: Any | None = None
) -> int:
    """Store measurements of whole closed hours at once, as `usage_meter_measurement` stores
    one (records replaced, OpenCost cross-checked against the stored allocated seconds)."""
    if not measurements:
        return 0
    hours = sorted(_hour(hour, now=timezone.now()) for hour in measurements)
    if hours[-1] - hours[0] != HOUR * (len(hours) - 1):
        raise ValidationError({"measurements": ["Give every hour of one span, without gaps."]})
    now = timezone.now()
    usage, capped = measured_capped({hour: measurements[hour].usage for hour in hours})
    measured_flags_replace(hours=hours, capped=capped)
    rows = [
        (u.tenant_id, None, u.hostname, MEASURED, u.resource, hour, u.unit_seconds,
         u.busy_seconds, now)
        for hour in hours for u in usage[hour]
    ]
    start, end = hours[0], hours[-1] + HOUR
    allocated: dict[datetime, dict[int, int]] = {}
    for row in (
        UsageRecord.objects.filter(source=ALLOCATED, hour__gte=start, hour__lt=end,
                                   resource__startswith=GPU_PREFIX)
        .values("hour", "tenant_id").annotate(seconds=Sum("unit_seconds")).order_by()
    ):
        allocated.setdefault(row["hour"], {})[row["tenant_id"]] = int(row["seconds"])
    CrossCheck.objects.filter(hour__in=hours).delete()
    checks = []
    for hour in hours:
        if measurements[hour].opencost is None:
            continue
        checks += [
            CrossCheck(tenant_id=c.tenant_id, hour=hour, portal_gpu_seconds=c.portal_gpu_seconds,
                       opencost_gpu_seconds=c.opencost_gpu_seconds,
                       difference_percent=c.difference_percent, flagged=c.flagged,
                       checked_at=now)
            for c in cross_checks(
                allocated=allocated.get(hour, {}), opencost=measurements[hour].opencost,
                threshold=settings.METERING_OPENCOST_THRESHOLD_PERCENT,
            )
        ]
    CrossCheck.objects.bulk_create(checks, batch_size=2000)
    return _replace_span(MEASURED, hours, lambda: _copy_counted(rows), actor=actor,
                         details={"cross_checks_flagged": sum(c.flagged for c in checks),
                                  "capped_host_hours": len(capped)})


def measured_metering_enabled() -> bool:
    return bool(settings.PROMETHEUS_URL)


def usage_meter_hour(*, hour: datetime, actor: Any | None = None) -> list[MeteringWindow]:
    """Meter a closed hour from both sources (allocated first: the OpenCost cross-check of the
    measured window compares with it). Measured is skipped without PROMETHEUS_URL."""
    windows = [usage_meter_window(source=ALLOCATED, hour=hour, actor=actor)]
    if measured_metering_enabled():
        windows.append(usage_meter_window(source=MEASURED, hour=hour, actor=actor))
    return windows


def open_periods_start(*, now: datetime) -> datetime:
    """The first hour of the oldest billing period still open: the month before `now`'s (its
    invoices are drafted and issued in the first days of this one), or an older month that
    still has a draft invoice."""
    this_month = floor_hour(now.astimezone(UTC)).replace(day=1, hour=0)
    start = (this_month - timedelta(days=1)).replace(day=1)
    oldest_draft = (
        Invoice.objects.filter(status=InvoiceStatus.DRAFT)
        .order_by("period_start").values_list("period_start", flat=True).first()
    )
    return min(start, oldest_draft.astimezone(UTC)) if oldest_draft else start


def _first_hour(*, now: datetime) -> datetime:
    first = floor_hour(now.astimezone(UTC) - timedelta(hours=settings.METERING_LOOKBACK_HOURS))
    first = min(first, open_periods_start(now=now))
    if settings.METERING_START is not None:
        start = settings.METERING_START.astimezone(UTC)
        first = max(first, start if start == floor_hour(start) else floor_hour(start) + HOUR)
    return first


def due_windows(*, now: datetime) -> list[tuple[datetime, str]]:
    """Every (hour, source) of an open billing period or within the look-back (and after
    METERING_START) whose window is not done — never metered, or a gap — oldest first,
    allocated before measured."""
    last = floor_hour(now.astimezone(UTC)) - HOUR
    first = _first_hour(now=now)
    if first > last:
        return []
    sources = [ALLOCATED] + ([MEASURED] if measured_metering_enabled() else [])
    done = set(
        MeteringWindow.objects.filter(hour__gte=first, hour__lte=last, status=WindowStatus.DONE,
                                      source__in=sources).values_list("hour", "source")
    )
    due = []
    hour = first
    while hour <= last:
        due += [(hour, source) for source in sources if (hour, source) not in done]
        hour += HOUR
    return due


def _runs(hours: list[datetime]) -> list[list[datetime]]:
    """`hours` (sorted) cut into runs of consecutive hours."""
    runs: list[list[datetime]] = []
    for hour in hours:
        if runs and runs[-1][-1] + HOUR == hour:
            runs[-1].append(hour)
        else:
            runs.append([hour])
    return runs


def usage_meter_due(*, now: datetime | None = None) -> int:
    """Meter every closed hour not yet done in an open billing period (or the look-back), gaps
    included. The allocated hours are metered whole, each run of consecutive hours at once
    (`usage_meter_span`: one statement however long the run), so that no hour of a month
    being invoiced stays unmetered; the measured windows (one Prometheus reading each) at most
    METERING_MAX_WINDOWS_PER_RUN, those of the look-back first, each part oldest first.
    Returns how many windows became done.

    Once Prometheus is found unavailable, the run's other measured windows are recorded as gaps
    without asking it again (each would wait for its timeout)."""
    now = now or timezone.now()
    due = due_windows(now=now)
    done = 0
    for run in _runs([hour for hour, source in due if source == ALLOCATED]):
        usage_meter_span(start=run[0], end=run[-1] + HOUR)
        done += len(run)
    unavailable: str | None = None
    # The look-back's measured windows first (the last hours, what the pages show), then the
    # open periods' older ones.
    recent = floor_hour(now.astimezone(UTC) - timedelta(hours=settings.METERING_LOOKBACK_HOURS))
    measured = sorted((hour for hour, source in due if source == MEASURED),
                      key=lambda hour: (hour < recent, hour))
    for hour in measured[: settings.METERING_MAX_WINDOWS_PER_RUN]:
        if unavailable:
            _record_gap(MEASURED, hour, unavailable, actor=None)
            continue
        window = usage_meter_window(source=MEASURED, hour=hour)
        if window.status == WindowStatus.DONE:
            done += 1
        elif window.last_error.startswith(PrometheusUnavailable.__name__):
            unavailable = window.last_error
    return done
