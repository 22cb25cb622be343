"""What tenants see of cost: the spend page (this month, forecast, budget, invoices with their
PDF), the spend card on the tenant's dashboard, and the price quote on every launch and
quota-request form. Thin views over billing's selectors; the tenant comes from the access
rules, so another tenant's page, card, invoice or PDF is a 404."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from tenants.access import tenant_get_for_user
from tenants.pages import redirect_to_current, tenant_page
from tenants.quota.forms import lenient_lines
from tenants.workloads.forms import FORMS
from tenants.workloads.selectors import launch_context
from tenants.workloads.services.lifecycle import workload_validate

from ..selectors.spend import (
    quote_demand,
    tenant_invoice_get,
    tenant_invoices,
    tenant_spend,
)
from ..services import invoice_files
from .cost import spend_page_card

QUOTE_TEMPLATE = "billing/tenant/_quote.html"


@login_required
def tenant_home(request):
    """/billing/: the current tenant's spend (the one the other tenant pages last showed)."""
    return redirect_to_current(request, "billing:tenant-spend")


@login_required
def spend(request, slug: str):
    tenant, context = tenant_page(request, slug, "spend")
    month = tenant_spend(tenant=tenant, now=timezone.now())
    context |= {
        "spend": month,
        "chart": month.chart(),
        "invoices": tenant_invoices(tenant=tenant),
        "switch_url": "billing:tenant-spend",
        **spend_page_card(request, tenant),
    }
    return render(request, "billing/tenant/spend.html", context)


@login_required
def spend_card(request, slug: str):
    """The dashboard's spend card (an htmx partial: tenants' pages know no billing)."""
    tenant = tenant_get_for_user(user=request.user, slug=slug)
    month = tenant_spend(tenant=tenant, now=timezone.now())
    return render(request, "billing/tenant/_spend_card.html", {"tenant": tenant, "spend": month})


@login_required
def invoice_pdf_download(request, slug: str, pk: int):
    tenant = tenant_get_for_user(user=request.user, slug=slug)
    invoice = tenant_invoice_get(tenant=tenant, invoice_id=pk, fmt="pdf")
    # The same file finance downloads: kept once rendered.
    pdf = invoice_files.invoice_file_body(invoice=invoice, fmt="pdf")
    response = HttpResponse(pdf, content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="{invoice.number}.pdf"'
    response["Cache-Control"] = "private, no-store"
    return response


# --- the price on launch and quota-request forms ------------------------------------------------


def _field_names(form, names) -> str:
    labels = [str(form.fields[name].label or name).lower() if name in form.fields else name
              for name in names]
    return ", ".join(dict.fromkeys(labels))


def launch_demand(*, tenant, kind: str, data: Mapping[str, Any]) -> tuple[dict | None, str]:
    """The demand of the launch form's fields (the kind's own demand, as the launch computes
    it), or None and what to fill in first. The name does not change the price."""
    form = FORMS[kind](data, tenant=tenant, context=launch_context(tenant=tenant), prefix=None)
    form.is_valid()
    wrong = [name for name in form.errors if name not in ("name", "__all__")]
    if wrong:
        return None, _field_names(form, wrong)
    try:
        _, demand = workload_validate(tenant=tenant, kind=kind, spec=form.spec())
    except ValidationError as exc:
        names = [key.removeprefix("spec.") for key in exc.message_dict]
        return None, _field_names(form, [n for n in names if n != "spec"]) or "the form"
    return demand, ""


@login_required
@require_http_methods(["GET", "POST"])
def quote(request):
    """The htmx partial under a launch or quota-request form: "≈ EUR x.xx per hour", with a
    line per resource class. `?tenant=<slug>&kind=<kind>` (a launch) or `&form=quota`; the
    form's fields come in the body. Bad or half-filled input says what to fill in, never 500."""
    tenant = tenant_get_for_user(user=request.user, slug=request.GET.get("tenant", ""))
    data = request.POST if request.method == "POST" else request.GET
    context: dict[str, Any] = {"tenant": tenant, "quote": None, "fill_in": ""}
    kind = request.GET.get("kind", "")
    if request.GET.get("form") == "quota":
        demand = dict(lenient_lines(data))
        context["what"] = "the increase asked for"
        if not demand:
            context["fill_in"] = "a resource and an amount"
    elif kind in FORMS:
        demand, context["fill_in"] = launch_demand(tenant=tenant, kind=kind, data=data)
        context["what"] = "this launch"
    else:
        demand = None
        context["fill_in"] = "the kind of workload"
    if demand and not context["fill_in"]:
        context["quote"] = quote_demand(demand=demand, at=timezone.now())
    return render(request, QUOTE_TEMPLATE, context)

