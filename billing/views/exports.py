"""Invoice list exports written in the background (see `billing.services.invoice_exports`):
asking for one, the page of the exports a person asked for (live while one is being written),
and their downloads. Each person sees only their own exports; anyone else's is a 404."""

from django.contrib import messages
from django.core.exceptions import ObjectDoesNotExist
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from ..downloads import attachment
from ..models import ExportStatus, InvoiceExport
from ..services.invoice_exports import inline_limit, invoice_export_for_user
from .access import finance_required

PAGE_SIZE = 25


@require_GET
@finance_required
def export_list(request):
    """The exports the person asked for, newest first; polled while any is being written."""
    exports = InvoiceExport.objects.filter(requested_by=request.user).defer("body")
    page = Paginator(exports, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "any_in_progress": any(export.in_progress for export in page.object_list),
        "highlight": request.GET.get("new", ""),
        "limits": {fmt: inline_limit(fmt) for fmt in ("csv", "xlsx")},
    }
    if request.htmx:
        return render(request, "billing/finance/exports.html#export-table", context)
    return render(request, "billing/finance/exports.html", context)


@require_GET
@finance_required
def export_download(request, export_id: int):
    """The export's file, once written; before that, its page says how far it is."""
    try:
        export = invoice_export_for_user(user=request.user, export_id=export_id)
    except ObjectDoesNotExist:
        raise Http404 from None
    if export.status != ExportStatus.READY:
        messages.info(request, f"Export {export.pk} is not written: {export.get_status_display()}.")
        return redirect(reverse("billing:invoice-exports"))
    body = InvoiceExport.objects.filter(pk=export.pk).values_list("body", flat=True).get()
    return attachment(bytes(body), fmt=export.fmt, filename=export.filename)
