"""Exports of invoice lists too long to write while the person waits.

A list export is written inside the request when it is short (`inline`): a CSV of 20,000
invoices streams in about 5 s, an XLSX of 2,000 is written in about 5 s. A longer one (the XLSX
of every invoice of a large fleet takes about a minute, longer than a web worker is given) is
recorded as an `InvoiceExport` with the filters that select it and written by a Celery task;
its page shows the progress and, once written, the download. Level-triggered: the periodic
sweep queues again any export that is still to write (the broker was down when it was asked
for, a worker died while writing it) and deletes those past `INVOICE_EXPORT_KEEP_DAYS`.

What an export holds is read when it is written, with the requester's access at that time.
"""

import logging
import tempfile
from datetime import timedelta

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import OperationalError, transaction
from django.db.models import F, Q
from django.http import QueryDict
from django.utils import timezone

from core.audit import audit
from core.queueing import enqueue_on_commit, send_task

from .. import downloads
from ..filters import InvoiceFilterSet, filter_errors
from ..models import ExportStatus, InvoiceExport
from ..selectors.finance import invoices_for_list

logger = logging.getLogger(__name__)

RENDER_TASK = "billing.tasks.invoice_export_render_task"
# Query parameters of the list that do not change what is exported.
NOT_FILTERS = frozenset({"page", "page_size"})


def inline_limit(fmt: str) -> int:
    """The most invoices an export of `fmt` writes inside the request."""
    return settings.INVOICE_EXPORT_INLINE_MAX[fmt]


def is_inline(*, fmt: str, invoice_count: int) -> bool:
    return invoice_count <= inline_limit(fmt)


def export_filters(query) -> dict[str, list[str]]:
    """The filters (and sort) of a list's query string, as kept on the export."""
    return {key: query.getlist(key) for key in sorted(query) if key not in NOT_FILTERS}


@transaction.atomic
def invoice_export_request(
    *, actor, fmt: str, filters: dict[str, list[str]], invoice_count: int
) -> InvoiceExport:
    """Record `actor`'s export of the invoices `filters` select, to be written by a worker;
    audited like every export, and queued once committed."""
    if fmt not in settings.INVOICE_EXPORT_INLINE_MAX:
        raise ValueError(f"No invoice list export of format {fmt!r}.")
    export = InvoiceExport.objects.create(
        requested_by=actor, fmt=fmt, filters=filters, invoice_count=invoice_count
    )
    audit(actor=actor, action="invoices.export", obj=export,
          changes={"format": fmt, "invoices": invoice_count, "filters": filters,
                   "background": True})
    enqueue_on_commit(RENDER_TASK, export.pk)
    return export


def invoice_export_for_user(*, user, export_id: int) -> InvoiceExport:
    """The export `user` asked for (anyone else's does not exist for them), without its body."""
    return InvoiceExport.objects.defer("body").get(pk=export_id, requested_by=user)


def _stale_before():
    """An export still `running` since before this was left by a worker that died."""
    return timezone.now() - timedelta(seconds=settings.INVOICE_EXPORT_TIME_LIMIT + 60)


def _claim(export_id: int) -> bool:
    """Mark the export as being written by this worker, unless it is written, failed, or being
    written by a live one (one UPDATE: two deliveries of the message never both write it)."""
    claimable = Q(status=ExportStatus.QUEUED) | Q(
        status=ExportStatus.RUNNING, started_at__lt=_stale_before()
    )
    return bool(
        InvoiceExport.objects.filter(claimable, pk=export_id).update(
            status=ExportStatus.RUNNING, started_at=timezone.now(), attempts=F("attempts") + 1,
            error="",
        )
    )


def _write(export: InvoiceExport) -> bytes:
    query = QueryDict(mutable=True)
    for key, values in export.filters.items():
        query.setlist(key, values)
    filterset = InvoiceFilterSet(query, queryset=invoices_for_list(user=export.requested_by))
    errors = filter_errors(filterset, query, ignore=())
    if errors:  # checked when asked for; a filter may have changed since
        raise ValueError("; ".join(errors))
    invoices = filterset.qs
    with tempfile.TemporaryFile() as out:
        downloads.write_invoices(invoices=invoices, fmt=export.fmt, out=out)
        out.seek(0)
        return out.read()


def invoice_export_render(*, export_id: int) -> str:
    """Write the export (the task's work); returns its status afterwards. An export that is not
    to be written by this call (written, failed, gone, in another worker's hands) is left alone.
    A lost database connection puts it back in the queue and is raised for the task to retry;
    anything else fails it, with the reason its page shows."""
    if not _claim(export_id):
        current = InvoiceExport.objects.filter(pk=export_id).values_list("status", flat=True)
        return current.first() or "gone"
    export = InvoiceExport.objects.select_related("requested_by").defer("body").get(pk=export_id)
    try:
        body = _write(export)
    except OperationalError as exc:  # the database went away: the task retries, the sweep after
        InvoiceExport.objects.filter(pk=export_id).update(
            status=ExportStatus.QUEUED, error=f"Waiting for the database: {exc}"[:500]
        )
        raise
    except SoftTimeLimitExceeded:
        return _fail(export_id, "Writing it took longer than "
                     f"{settings.INVOICE_EXPORT_TIME_LIMIT // 60} minutes. Narrow the filters.")
    except Exception as exc:  # anything else will fail again: the person is told why
        logger.exception("Invoice export %s failed", export_id)
        return _fail(export_id, f"It could not be written: {exc}")
    InvoiceExport.objects.filter(pk=export_id).update(
        status=ExportStatus.READY, body=body, size=len(body), finished_at=timezone.now()
    )
    return ExportStatus.READY


def _fail(export_id: int, reason: str) -> str:
    InvoiceExport.objects.filter(pk=export_id).update(
        status=ExportStatus.FAILED, error=reason[:500], finished_at=timezone.now()
    )
    return ExportStatus.FAILED


def invoice_exports_sweep() -> tuple[int, int]:
    """Queue again every export still to write that no worker is on (queued for a minute, or
    left running past the time limit), and delete those past their keeping; returns (queued,
    deleted)."""
    now = timezone.now()
    waiting = InvoiceExport.objects.filter(
        Q(status=ExportStatus.QUEUED, created_at__lt=now - timedelta(minutes=1))
        | Q(status=ExportStatus.RUNNING, started_at__lt=_stale_before())
    ).values_list("pk", flat=True)
    queued = sum(send_task(RENDER_TASK, pk) for pk in waiting)
    deleted, _ = InvoiceExport.objects.filter(
        created_at__lt=now - timedelta(days=settings.INVOICE_EXPORT_KEEP_DAYS)
    ).delete()
    return queued, deleted
