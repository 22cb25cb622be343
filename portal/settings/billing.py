"""Chargeback: money, invoices and their files, metering and the month-end run."""

from datetime import datetime
from decimal import Decimal

import environ
from celery.schedules import crontab

from .base import CELERY_BEAT_SCHEDULE, CELERY_TASK_ALWAYS_EAGER, env

# The ISO 4217 code every amount of money on the pages is shown in (budgets, invoices).
BILLING_CURRENCY = env.str("BILLING_CURRENCY", default="EUR")
# Tax charged on invoices, in percent of the discounted subtotal; empty: no tax (none shown).
_billing_tax = env.str("BILLING_TAX_PERCENT", default="")
try:
    BILLING_TAX_PERCENT = Decimal(_billing_tax) if _billing_tax.strip() else None
except ArithmeticError as _error:
    raise environ.ImproperlyConfigured("BILLING_TAX_PERCENT must be a number, e.g. 19.") from _error
if BILLING_TAX_PERCENT is not None and not (0 <= BILLING_TAX_PERCENT <= 100):
    raise environ.ImproperlyConfigured("BILLING_TAX_PERCENT must be between 0 and 100.")
# Who bills: the provider, publisher and invoice issuer that FOCUS exports name.
BILLING_PROVIDER_NAME = env.str("BILLING_PROVIDER_NAME", default="AI Factory")
# Days from an invoice's issue date to its due date.
BILLING_PAYMENT_TERMS_DAYS = env.int("BILLING_PAYMENT_TERMS_DAYS", default=30)
# An issued, paid or voided invoice's PDF, CSV and XLSX are rendered by a worker right after the
# decision, so that the first download is served from the kept file. Without a worker (eager
# mode) that rendering would run inside the request, for every invoice of a bulk issue: there
# the files are rendered at their first download instead.
INVOICE_FILES_PRERENDER = env.bool("INVOICE_FILES_PRERENDER", default=not CELERY_TASK_ALWAYS_EAGER)
# An invoice list export of more invoices than this (per format) is written by a worker, not
# while its requester waits (seconds of writing each); kept for INVOICE_EXPORT_KEEP_DAYS;
# a worker writes one for at most INVOICE_EXPORT_TIME_LIMIT seconds.
INVOICE_EXPORT_INLINE_MAX = {
    "csv": env.int("INVOICE_EXPORT_INLINE_MAX_CSV", default=20_000),
    "xlsx": env.int("INVOICE_EXPORT_INLINE_MAX_XLSX", default=2_000),
}
INVOICE_EXPORT_KEEP_DAYS = env.int("INVOICE_EXPORT_KEEP_DAYS", default=7)
INVOICE_EXPORT_TIME_LIMIT = env.int("INVOICE_EXPORT_TIME_LIMIT", default=1800)
if min(INVOICE_EXPORT_INLINE_MAX.values()) < 0 or INVOICE_EXPORT_KEEP_DAYS < 1:
    raise environ.ImproperlyConfigured(
        "INVOICE_EXPORT_INLINE_MAX_* must be 0 or more and INVOICE_EXPORT_KEEP_DAYS at least 1."
    )
if INVOICE_EXPORT_TIME_LIMIT < 60:
    raise environ.ImproperlyConfigured("INVOICE_EXPORT_TIME_LIMIT must be at least 60 seconds.")

# Metering (issue 12): every closed UTC hour is metered from the workloads' histories
# (allocated) and, with PROMETHEUS_URL, from DCGM series (measured), at METERING_MINUTE past
# each hour. Hours not done in an open billing period (last month, older months with a draft
# invoice) or within the look-back (never metered, or gaps while Prometheus was down) are
# metered by the next run: every allocated hour, at most METERING_MAX_WINDOWS_PER_RUN measured
# windows at a time (docs/billing.md).
METERING_LOOKBACK_HOURS = env.int("METERING_LOOKBACK_HOURS", default=48)
METERING_MAX_WINDOWS_PER_RUN = env.int("METERING_MAX_WINDOWS_PER_RUN", default=24)
METERING_MINUTE = env.int("METERING_MINUTE", default=5)
# Nothing before this instant is metered (ISO 8601, e.g. 2026-01-01T00:00:00Z); empty: no limit.
METERING_START = env.str("METERING_START", default="")
# The PromQL subquery step: at least the DCGM exporter's (and OpenCost's) scrape interval.
METERING_STEP_SECONDS = env.int("METERING_STEP_SECONDS", default=30)
# Flag an hour where OpenCost's GPU-seconds of a tenant differ more than this from the portal's.
METERING_OPENCOST_THRESHOLD_PERCENT = Decimal(
    env.str("METERING_OPENCOST_THRESHOLD_PERCENT", default="10")
)
try:
    METERING_START = datetime.fromisoformat(METERING_START) if METERING_START else None
except ValueError:
    raise environ.ImproperlyConfigured(
        "METERING_START must be an ISO 8601 date and time, e.g. 2026-01-01T00:00:00Z."
    ) from None
if METERING_START is not None and METERING_START.tzinfo is None:
    raise environ.ImproperlyConfigured("METERING_START needs its time zone, e.g. a final Z.")
if not 0 <= METERING_MINUTE <= 59:
    raise environ.ImproperlyConfigured("METERING_MINUTE must be 0 to 59.")
if METERING_STEP_SECONDS < 1 or 3600 % METERING_STEP_SECONDS:
    raise environ.ImproperlyConfigured("METERING_STEP_SECONDS must divide an hour (15, 30, 60…).")
if METERING_LOOKBACK_HOURS < 1 or METERING_MAX_WINDOWS_PER_RUN < 1:
    raise environ.ImproperlyConfigured(
        "METERING_LOOKBACK_HOURS and METERING_MAX_WINDOWS_PER_RUN must be at least 1."
    )
CELERY_BEAT_SCHEDULE |= {
    "billing-meter-hourly": {
        "task": "billing.tasks.usage_meter_sweep_task",
        "schedule": crontab(minute=METERING_MINUTE),
    },
}

# Billing (invoices and budgets): drafts for the month just ended once its last hours are
# metered, and budget alerts every hour.
CELERY_BEAT_SCHEDULE |= {
    "billing-invoices-month-end": {
        "task": "billing.tasks.invoices_month_end_task",
        "schedule": crontab(minute=0, hour=3, day_of_month=1),
    },
    "billing-budget-alerts-hourly": {
        "task": "billing.tasks.budget_alerts_task",
        "schedule": crontab(minute=20),
    },
    "billing-invoice-exports-sweep": {
        "task": "billing.tasks.invoice_exports_sweep_task",
        "schedule": 300.0,
    },
}

