"""billing.invoice_rows writes each row of the invoice list, and each event of an invoice's
audit trail, as the templates used to."""

import pytest
from django.template import Context, Template

from billing.invoice_rows import LIST_COLUMNS, audit_event_item, invoice_row
from billing.models import Invoice
from billing.services import invoicing
from portal.audit import audit
from portal.models import AuditEvent

from .finance_data import FEB, JAN, bill, tenant_with_cost_center

pytestmark = pytest.mark.django_db

# The row of templates/billing/finance/invoices.html before it was written in Python.
TEMPLATE_ROW = Template(
    """{% load humanize %}<tr data-invoice="{{ invoice.pk }}" data-status="{{ invoice.status }}">
<td class="text-center">{% if invoice.is_draft %}<input class="form-check-input draft-check" type="checkbox" name="invoice" value="{{ invoice.pk }}" id="select-{{ invoice.pk }}" aria-label="Select the draft for {{ invoice.tenant_name }}, {{ invoice.month_label }}">{% endif %}</td>
<td class="text-nowrap"><a class="fw-semibold" href="{{ detail_prefix }}{{ invoice.pk }}/">{% if invoice.number %}{{ invoice.number }}{% else %}Draft #{{ invoice.pk }}{% endif %}</a></td>
<td>{{ invoice.tenant_name }} <span class="small text-muted">{{ invoice.tenant.slug }}</span></td>
<td class="text-nowrap">{% if invoice.cost_center %}<span class="font-monospace small">{{ invoice.cost_center }}</span>{% else %}<span class="text-muted small">—</span>{% endif %}</td>
<td class="text-nowrap">{{ invoice.period_start|date:"Y-m" }}</td>
<td><span class="badge text-bg-{{ invoice.status_color }}" data-status="{{ invoice.status }}">{{ invoice.get_status_display }}</span></td>
<td class="text-nowrap small">{{ invoice.issue_date|date:"Y-m-d"|default:"—" }}</td>
<td class="text-nowrap small">{{ invoice.due_date|date:"Y-m-d"|default:"—" }}</td>
<td class="text-end text-nowrap">{{ invoice.subtotal|floatformat:"2g" }}</td>
<td class="text-end text-nowrap fw-semibold">{{ invoice.currency }} {{ invoice.total|floatformat:"2g" }}</td>
</tr>"""  # noqa: E501
)


def _squeezed(html: str) -> str:
    return html.replace("\n", "")  # the template's line breaks (between tags) aside


def test_every_kind_of_row_is_what_the_template_wrote(finance):
    odd = tenant_with_cost_center("odd", 'Nova <b>&</b> "Co"', "<CC&1>")
    plain = tenant_with_cost_center("plain", "Plain", "")
    invoicing.invoice_issue(invoice_id=bill(odd, JAN, 700).pk, actor=finance)
    paid = invoicing.invoice_issue(invoice_id=bill(plain, JAN, 3).pk, actor=finance)
    invoicing.invoice_mark_paid(invoice_id=paid.pk, actor=finance)
    void = invoicing.invoice_issue(invoice_id=bill(plain, FEB, 5).pk, actor=finance)
    invoicing.invoice_void(invoice_id=void.pk, actor=finance, reason="wrong")
    bill(odd, FEB, 1)
    bill(plain, FEB, 7)
    invoices = list(Invoice.objects.select_related("tenant").order_by("pk"))
    rows = list(Invoice.objects.values_list(*LIST_COLUMNS).order_by("pk"))

    assert {i.status for i in invoices} == {"draft", "issued", "paid", "void"}
    for invoice, values in zip(invoices, rows, strict=True):
        written = invoice_row(values, detail_prefix="/billing/invoices/")
        context = Context({"invoice": invoice, "detail_prefix": "/billing/invoices/"})
        assert _squeezed(written) == _squeezed(TEMPLATE_ROW.render(context)), invoice.pk


# An event of the audit trail of templates/billing/finance/invoice_detail.html, before.
TEMPLATE_EVENT = Template(
    """<li class="list-group-item small" data-action="{{ event.action }}"><span class="text-muted text-nowrap">{{ event.created_at|date:"Y-m-d H:i" }}</span> · <strong>{{ event.actor_repr|default:"system" }}</strong> <span class="font-monospace">{{ event.action }}</span>{% if event.changes.reason %}: {{ event.changes.reason }}{% endif %}{% if event.changes.format %} ({{ event.changes.format }}){% endif %}</li>"""  # noqa: E501
)


def test_every_kind_of_trail_event_is_what_the_template_wrote(finance):
    invoice = bill(tenant_with_cost_center("trail", "Trail", ""), JAN, 1)
    for actor, action, changes in [
        (finance, "invoice.export", {"format": "pdf"}),
        (None, "invoice.void", {"reason": 'a <b>"wrong"</b> & late', "total": "1.00"}),
        (finance, "invoice.pay", {"reason": "", "format": ""}),
        (finance, "invoice.compute", {}),
        (finance, "invoice.odd", ["a list", "not a dict"]),
        (finance, "invoice.number", {"reason": 12, "format": 3.5}),
    ]:
        audit(actor=actor, action=action, obj=invoice, changes=changes)
    AuditEvent.objects.filter(action="invoice.odd").update(changes=["a list", "not a dict"])

    events = list(AuditEvent.objects.filter(object_id=str(invoice.pk)))
    assert len(events) >= 6
    for event in events:
        expected = TEMPLATE_EVENT.render(Context({"event": event}))
        assert audit_event_item(event) == expected, event.action


def _page_rows(client) -> dict[int, str]:
    html = client.get("/billing/invoices/?sort=number").content.decode()
    rows = {}
    for part in html.split('<tr data-invoice="')[1:]:
        pk = int(part[: part.index('"')])
        rows[pk] = '<tr data-invoice="' + part[: part.index("</tr>") + len("</tr>")]
    return rows


def _template_rows() -> dict[int, str]:
    return {
        invoice.pk: _squeezed(TEMPLATE_ROW.render(Context(
            {"invoice": invoice, "detail_prefix": "/billing/invoices/"})))
        for invoice in Invoice.objects.select_related("tenant")
    }


# Each value a row of the list shows, changed alone on a draft (rows are kept per process under
# the values they show: invoice_rows._ROWS).
CHANGES = {
    "tenant name": {"tenant_name": "Renamed <Co>"},
    "cost center": {"cost_center": "CC-NEW"},
    "period": {"period_start": "2026-03-01T00:00:00Z"},
    "subtotal": {"subtotal": "1234567.89"},
    "total": {"total": "0.10"},
    "currency": {"currency": "CHF"},
}


@pytest.mark.parametrize("change", CHANGES)
def test_a_listed_row_follows_each_value_it_shows(login, finance, change):
    draft = bill(tenant_with_cost_center("odd", "Odd", "CC1"), JAN, 3)
    bill(tenant_with_cost_center("plain", "Plain", ""), JAN, 5)
    client = login(finance)
    before = _page_rows(client)
    assert before == _template_rows()

    Invoice.objects.filter(pk=draft.pk).update(**CHANGES[change])
    after = _page_rows(client)

    assert after == _template_rows()
    assert after[draft.pk] != before[draft.pk]


def test_a_listed_row_follows_its_status_and_tenant_and_the_time_zone(login, finance, settings):
    tenant = tenant_with_cost_center("odd", "Odd", "CC1")
    draft = bill(tenant, JAN, 3)
    client = login(finance)
    before = _page_rows(client)

    invoicing.invoice_issue(invoice_id=draft.pk, actor=finance)  # status, number, dates
    issued = _page_rows(client)
    type(tenant).objects.filter(pk=tenant.pk).update(slug="renamed")
    renamed = _page_rows(client)
    settings.TIME_ZONE = "America/New_York"  # the period's first instant is in December there
    new_york = _page_rows(client)

    assert before != issued != renamed != new_york
    assert new_york == _template_rows()
    assert "<td class=\"text-nowrap\">2025-12</td>" in new_york[draft.pk]


# A usage line of templates/billing/finance/invoice_detail.html, before it was written in
# Python.
TEMPLATE_USAGE_LINE = Template(
    """{% load billing_tags %}{% with line=row.line %}
      <tr data-line="usage">
        <td>{{ line.description }}</td>
        <td class="font-monospace small text-nowrap">{{ line.resource }}</td>
        <td class="text-nowrap small">{{ line.period_start|date:"Y-m-d" }} – {{ row.last_day|date:"Y-m-d" }}</td>
        <td class="text-end text-nowrap">{{ line.quantity_hours|quantity_shown }}</td>
        <td class="text-end text-nowrap">{{ line.quantity|quantity_shown }} <span class="small text-muted">{{ line.resource|unit_hours:line.unit }}</span></td>
        <td class="text-end text-nowrap">{{ line.unit_price|decimal_shown }} <span class="small text-muted">/ {{ line.unit }}</span></td>
        <td class="text-end text-nowrap">{{ line.amount|floatformat:"2g" }}</td>
      </tr>
    {% endwith %}"""  # noqa: E501, RUF001
)


@pytest.mark.parametrize("zone", ["UTC", "Pacific/Auckland", "America/New_York"])
def test_every_kind_of_usage_line_is_what_the_template_wrote(settings, zone):
    from datetime import UTC, datetime
    from decimal import Decimal

    from django.utils import timezone

    from billing.documents import last_day
    from billing.invoice_rows import usage_line_row
    from billing.models import InvoiceLine

    settings.TIME_ZONE = zone
    start, end = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 2, 1, tzinfo=UTC)
    lines = [
        InvoiceLine(description="NVIDIA H100 80GB GPUs", resource="gpu:nvidia-h100-80gb",
                    period_start=start, period_end=end, quantity_hours=Decimal("1234.500000"),
                    quantity=Decimal("1234.5"), unit="hour", unit_price=Decimal("2.125000"),
                    amount=Decimal("2623.31")),
        InvoiceLine(description='<b>"Odd"</b> & co', resource="cpu", period_start=start,
                    period_end=datetime(2026, 1, 15, 13, tzinfo=UTC), quantity_hours=Decimal(0),
                    quantity=Decimal("0.000001"), unit="month", unit_price=Decimal(1000000),
                    amount=Decimal("1234567.89")),
        InvoiceLine(description="Unknown", resource="<weird>&class", period_start=start,
                    period_end=end, quantity_hours=Decimal("7"), quantity=Decimal("7"),
                    unit="hour", unit_price=Decimal("0.000000"), amount=Decimal("0.00")),
        InvoiceLine(description="MIG", resource="mig:nvidia-a100-80gb:1g.10gb",
                    period_start=start, period_end=end, quantity_hours=Decimal("0.5"),
                    quantity=Decimal("0.5"), unit="hour", unit_price=Decimal("0.333333"),
                    amount=Decimal("0.17")),
    ]
    with timezone.override(zone):
        for line in lines:
            row = {"line": line, "last_day": last_day(line.period_end)}
            written = usage_line_row(line, last_day=row["last_day"])
            expected = TEMPLATE_USAGE_LINE.render(Context({"row": row}))
            assert written.rstrip() == expected.rstrip(), line.description  # the loop's indent
