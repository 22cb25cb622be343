"""Import (with a dry-run preview and per-row errors) and export of the inventory."""

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone

from .. import transfer
from ..forms import ImportForm
from ..selectors.export import inventory_export_nested, inventory_export_records
from ..services.transfer import inventory_import
from .access import platform_admin_required


@platform_admin_required
def import_view(request):
    result = None
    form = ImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        result = inventory_import(
            text=data["data"], fmt=data["format"], objects=data["objects"],
            dry_run=data["dry_run"], actor=request.user,
        )
        if result.applied:
            messages.success(
                request,
                f"Imported: {result.count('create')} created, {result.count('update')} updated.",
            )
        elif not result.ok:
            messages.error(request, "Nothing was imported: fix the errors below and try again.")
    summary = (
        {a: result.count(a) for a in ("create", "update", "unchanged")} if result else None
    )
    return render(
        request, "inventory/import.html", {"form": form, "result": result, "summary": summary}
    )


EXPORT_FORMATS = ("csv", "json")


@platform_admin_required
def export_view(request):
    fmt = request.GET.get("format", "csv")
    objects = request.GET.get("objects", "nodes")
    if fmt not in EXPORT_FORMATS or objects not in transfer.COLUMNS:
        bad, known = (("format", EXPORT_FORMATS) if fmt not in EXPORT_FORMATS
                      else ("objects", tuple(transfer.COLUMNS)))
        context = {
            "code": 400,
            "title": "Unknown export",
            "detail": f"“{request.GET.get(bad)}” is not a {bad} the export knows: "
                      f"use {' or '.join(known)}.",
        }
        return render(request, "portal/error.html", context, status=400)
    stamp = timezone.now().strftime("%Y%m%d-%H%M")
    if fmt == "json":
        body, content_type = transfer.render_json(inventory_export_nested()), "application/json"
        filename = f"inventory-{stamp}.json"
    else:
        body = transfer.render_csv(inventory_export_records(objects=objects), objects=objects)
        content_type, filename = "text/csv", f"inventory-{objects}-{stamp}.csv"
    response = HttpResponse(body, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
