"""Billing's Celery tasks: thin interfaces that call one service each."""

from datetime import datetime, timedelta

from celery import shared_task
from django.conf import settings
from django.db import OperationalError
from django.utils import timezone

from core.prometheus import PrometheusUnavailable
from core.queueing import retry_policy

from .models import UsageRecord, WindowStatus
from .services import budgets, invoice_exports, invoice_files, invoicing, metering


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
    """Hourly (beat "billing-meter-hourly"): meter every closed hour not done yet in the open
    billing periods (and the look-back), gaps included. Returns how many windows became
    done."""
    return metering.usage_meter_due()


# Beat, on the 1st. Idempotent: drafts are recomputed, issued invoices left alone.
@shared_task(**retry_policy(OperationalError, max_retries=3))
def invoices_month_end_task() -> int:
    """Draft every tenant's invoice for the month just ended; returns how many."""
    last_month = (timezone.now().replace(day=1) - timedelta(days=1)).date()
    return len(invoicing.invoices_draft_month(month=last_month))


@shared_task(**retry_policy(OperationalError, max_retries=3))
def budget_alerts_task() -> int:
    """Beat, hourly: tell tenants' owners their spend passed 80 or 100 % of the budget."""
    return budgets.budget_alerts_send(now=timezone.now())


@shared_task(**retry_policy(OperationalError, max_retries=3))
def invoice_files_render_task(invoice_id: int) -> list[str]:
    """After an invoice is issued, paid or voided: render and keep its PDF, CSV and XLSX for
    its status now (a download renders any that is missing anyway); returns those rendered."""
    return invoice_files.invoice_files_render(invoice_id=invoice_id)


# Not acknowledged late: an export may take longer than the broker's visibility timeout, and
# Redis would hand it to a second worker. A worker that dies leaves it `running`; the sweep
# queues it again once past the time limit.
@shared_task(
    acks_late=False,
    autoretry_for=(OperationalError,),
    retry_backoff=5,
    retry_backoff_max=settings.TASK_RETRY_BACKOFF_MAX,
    max_retries=3,
    time_limit=settings.INVOICE_EXPORT_TIME_LIMIT,
    soft_time_limit=max(1, settings.INVOICE_EXPORT_TIME_LIMIT - 30),
)
def invoice_export_render_task(export_id: int) -> str:
    """Write an invoice list export asked for in the background; returns its status."""
    return invoice_exports.invoice_export_render(export_id=export_id)


@shared_task(**retry_policy(OperationalError, max_retries=3))
def invoice_exports_sweep_task() -> tuple[int, int]:
    """Beat, every 5 minutes: queue again the exports no worker is writing; delete old ones."""
    return invoice_exports.invoice_exports_sweep()
