"""Billing's batch work measured against PostgreSQL doing the same by hand (issue 13).

- **Usage ingestion**: `usage_meter_span` (the portal's metering path: workload histories read,
  hourly `UsageRecord` rows written in bulk, windows marked, one audit event) over the last
  `BENCH_METER_HOURS` hours of the data set's usage month, in rows written per second; against
  `COPY` of exactly the rows it wrote into the same table (same indexes, unique and check
  constraints, deferred foreign keys), through psycopg's copy. The hours' records of the data
  set are deleted first, so both write hours that hold no records, as a live hourly run does.
- **Month-end invoicing**: `invoices_draft_month` for the usage month, every tenant drafted from
  nothing (the month's invoices are deleted first, as on the 1st); against one SQL aggregation
  of the same usage rows: unit-seconds per tenant, resource class and rate period, joined to
  the rate card and priced.

Each runs in a transaction that is rolled back: the bench database (a clone of the cached data
set) is left as it was, and the template is never touched.
"""

from __future__ import annotations

import datetime
import time
from typing import Any

from django.db import connection, transaction
from django.db.models import Max

from billing.models import CreditNote, Invoice, InvoiceLine, Payment, Rate, UsageRecord
from billing.services.invoicing import invoices_draft_month
from billing.services.metering import usage_meter_span
from billing.services.metering_allocated import allocated_usage_between

INGESTION_TARGET = 0.5  # at least half COPY's rows per second
INVOICING_TARGET = 2.0  # at most twice the SQL's wall time
INVOICING_ROUNDS = 2  # each side runs this many times, in turn; its faster run counts
HOUR = datetime.timedelta(hours=1)
# The columns the metering path writes (the id comes from the table's identity, as in COPY).
COPY_COLUMNS = ("tenant_id", "workload_id", "hostname", "source", "resource", "hour",
                "unit_seconds", "busy_seconds", "metered_at")


class _Rollback(Exception):
    pass


def _rolled_back(measure) -> dict[str, Any]:
    """Run `measure()` in a transaction and roll it back, returning what it measured."""
    result: dict[str, Any] = {}
    try:
        with transaction.atomic():
            result = measure()
            raise _Rollback
    except _Rollback:
        pass
    return result


def _usage_month_end() -> datetime.datetime | None:
    last = UsageRecord.objects.filter(source=UsageRecord.Source.ALLOCATED).aggregate(
        last=Max("hour"))["last"]
    return None if last is None else last + HOUR


def measure_ingestion(*, hours: int) -> dict[str, Any]:
    end = _usage_month_end()
    if end is None:
        return {"name": "usage ingestion", "skipped": "no usage records in the data set"}
    start = end - HOUR * hours
    allocated = UsageRecord.objects.filter(
        source=UsageRecord.Source.ALLOCATED, hour__gte=start, hour__lt=end)

    def measure() -> dict[str, Any]:
        replaced = allocated.delete()[0]
        # Once untimed and undone, so that the portal writes into warm buffers as COPY, which
        # runs after it, does.
        warm = transaction.savepoint()
        usage_meter_span(start=start, end=end)
        transaction.savepoint_rollback(warm)
        started = time.perf_counter()
        written = usage_meter_span(start=start, end=end)
        portal_seconds = time.perf_counter() - started
        # How much of that the read of the workloads' histories is (the same read again, warm:
        # the rest is writing).
        started = time.perf_counter()
        allocated_usage_between(start=start, end=end)
        read_seconds = time.perf_counter() - started
        rows = list(allocated.values_list(*COPY_COLUMNS))
        allocated.delete()
        table = connection.ops.quote_name(UsageRecord._meta.db_table)
        with connection.cursor() as cursor:
            started = time.perf_counter()
            with cursor.cursor.copy(
                    f"COPY {table} ({', '.join(COPY_COLUMNS)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            copy_seconds = time.perf_counter() - started
        copied = allocated.count()
        portal_rate = written / portal_seconds if portal_seconds else 0.0
        copy_rate = copied / copy_seconds if copy_seconds else 0.0
        ratio = portal_rate / copy_rate if copy_rate else 0.0
        return {
            "name": "usage ingestion", "unit": "rows/s",
            "portal": "usage_meter_span", "floor": "COPY of the same rows",
            "portal_value": round(portal_rate), "floor_value": round(copy_rate),
            "ratio": round(ratio, 2), "target": f"≥ {INGESTION_TARGET:g} times COPY",
            "meets_target": ratio >= INGESTION_TARGET,
            "details": {
                "start": start.isoformat(), "end": end.isoformat(), "hours": hours,
                "rows": written, "rows_copied": copied, "rows_in_data_set": replaced,
                "portal_seconds": round(portal_seconds, 3),
                "histories_read_again_seconds": round(read_seconds, 3),
                "copy_seconds": round(copy_seconds, 3),
            },
        }

    return _rolled_back(measure)


def _invoicing_sql() -> str:
    usage, rate = UsageRecord._meta.db_table, Rate._meta.db_table
    # Rates are per hour of a unit (or per month: prorated by the calculations; none in the
    # data set), so an hour's unit-seconds cost seconds * price / 3600.
    return f"""
        SELECT u.tenant_id, u.resource, r.id, SUM(u.unit_seconds) AS unit_seconds,
               ROUND(SUM(u.unit_seconds) * r.unit_price / 3600, 2) AS amount
        FROM {usage} u
        LEFT JOIN {rate} r ON r.resource = u.resource AND r.valid_from <= u.hour
             AND (r.valid_to IS NULL OR r.valid_to > u.hour)
        WHERE u.source = 'allocated' AND u.hour >= %s AND u.hour < %s
        GROUP BY u.tenant_id, u.resource, r.id, r.unit_price
        ORDER BY u.tenant_id, u.resource, r.id
    """  # noqa: S608 (table names from the models)


def measure_invoicing() -> dict[str, Any]:
    end = _usage_month_end()
    if end is None:
        return {"name": "month-end invoicing", "skipped": "no usage records in the data set"}
    last_hour = end - HOUR
    start = last_hour.replace(day=1, hour=0, minute=0, second=0, microsecond=0)

    def measure() -> dict[str, Any]:
        month = Invoice.objects.filter(period_start=start)
        invoice_ids = list(month.values_list("pk", flat=True))
        # As on the 1st: the month has no invoices yet. Issued ones refuse the ORM's delete.
        with connection.cursor() as cursor:
            for model, column in ((CreditNote, "invoice_id"), (Payment, "invoice_id"),
                                  (InvoiceLine, "invoice_id"),
                                  (Invoice, "id")):
                cursor.execute(
                    f"DELETE FROM {model._meta.db_table} WHERE {column} = ANY(%s)",  # noqa: S608
                    [invoice_ids])
            sql = _invoicing_sql()
            cursor.execute(sql, [start, end])  # warms the buffers for both runs
            cursor.fetchall()
        # Each side twice, in turn, and the faster of its two runs: on a shared machine one
        # run of a few seconds is one moment of it. Each portal run drafts from nothing and is
        # rolled back after.
        portal_runs, sql_runs, details = [], [], {}
        for _ in range(INVOICING_ROUNDS):
            savepoint = transaction.savepoint()
            started = time.perf_counter()
            drafts = invoices_draft_month(month=start.date())
            portal_runs.append(time.perf_counter() - started)
            details = details or {
                "drafts": len(drafts),
                "lines": InvoiceLine.objects.filter(invoice__in=drafts).count(),
            }
            transaction.savepoint_rollback(savepoint)
            with connection.cursor() as cursor:
                started = time.perf_counter()
                cursor.execute(sql, [start, end])
                groups = cursor.fetchall()
                sql_runs.append(time.perf_counter() - started)
        portal_seconds, sql_seconds = min(portal_runs), min(sql_runs)
        ratio = portal_seconds / sql_seconds if sql_seconds else 0.0
        return {
            "name": "month-end invoicing", "unit": "s",
            "portal": "invoices_draft_month", "floor": "one SQL aggregation",
            "portal_value": round(portal_seconds, 3), "floor_value": round(sql_seconds, 4),
            "ratio": round(ratio, 1), "target": f"≤ {INVOICING_TARGET:g} times the SQL",
            "meets_target": ratio <= INVOICING_TARGET,
            "details": {
                "month": f"{start:%Y-%m}", "invoices_replaced": len(invoice_ids),
                **details,
                "sql_groups": len(groups),
                "usage_rows": UsageRecord.objects.filter(
                    source=UsageRecord.Source.ALLOCATED, hour__gte=start, hour__lt=end).count(),
                "portal_runs_s": [round(seconds, 3) for seconds in portal_runs],
                "sql_runs_s": [round(seconds, 4) for seconds in sql_runs],
            },
        }

    return _rolled_back(measure)
