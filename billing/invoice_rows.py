"""The invoice list's rows, an invoice's usage lines and its audit trail, written in Python: the
same markup the templates wrote per row (and per line, per event).

Django's template engine resolved about 25 variables and 4 conditions per row: most of a
page's time once its queries were cheap. Each row is now one f-string (every text escaped as
the template escaped it); tests/billing/test_invoice_rows.py holds the template these rows
replaced and checks that every kind of row comes out the same.
"""

from decimal import ROUND_HALF_UP, Decimal
from html import escape

from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from portal.cached_rows import BoundedMemo

from .models import InvoiceStatus
from .templatetags.billing_tags import decimal_shown, quantity_shown, unit_hours

TWO_PLACES = Decimal("0.01")
_NO_COST_CENTER = SafeString('<span class="text-muted small">—</span>')
# A status badge has no value of the invoice's own in it: one safe string per status.
_BADGES = {
    status: format_html(
        '<span class="badge text-bg-{}" data-status="{}">{}</span>',
        InvoiceStatus.color(status), status, label,
    )
    for status, label in InvoiceStatus.choices
}


def money_shown(value: Decimal) -> str:
    """What `floatformat:"2g"` shows in English: thousands grouped, two places."""
    return f"{value.quantize(TWO_PLACES, ROUND_HALF_UP):,}"


# The columns a row is written from, in this order (`values_list(*LIST_COLUMNS)`): plain
# values, not an Invoice and a Tenant per row (building them was a third of the rows' time).
LIST_COLUMNS = (
    "id", "number", "status", "tenant_name", "tenant__slug", "cost_center", "period_start",
    "issue_date", "due_date", "subtotal", "total", "currency",
)
_LABELS = dict(InvoiceStatus.choices)


def _badge(status: str) -> SafeString:
    badge = _BADGES.get(status)
    if badge is None:  # a status the choices do not know (never stored: a check constraint)
        return format_html('<span class="badge text-bg-{}" data-status="{}">{}</span>',
                           InvoiceStatus.color(status), status, _LABELS.get(status, status))
    return badge


# Each row's HTML by its values, the link prefix and the time zone (all a row depends on).
_ROWS = BoundedMemo(4000)


def invoice_rows(page, *, detail_prefix: str) -> list[SafeString]:
    """The `<tr>` of each invoice of `page` (`LIST_COLUMNS` values), each written once per
    process for the values it shows (`invoice_row`)."""
    return _ROWS.written(
        (detail_prefix, timezone.get_current_timezone()), page,
        lambda values: invoice_row(values, detail_prefix=detail_prefix),
    )


def invoice_row(values: tuple, *, detail_prefix: str) -> SafeString:
    """One `<tr>` of the invoice list, from an invoice's `LIST_COLUMNS`.

    Every text is escaped as the template's autoescape did (`html.escape`, which Django's
    `escape` calls; `format_html` cost more than the rest of the row, through its laziness
    checks)."""
    (pk, number, status, tenant_name, tenant_slug, cost_center, period_start, issue_date,
     due_date, subtotal, total, currency) = values
    if cost_center:
        cost_center = f'<span class="font-monospace small">{escape(cost_center)}</span>'
    else:
        cost_center = _NO_COST_CENTER
    select = ""
    if status == InvoiceStatus.DRAFT:
        select = (
            '<input class="form-check-input draft-check" type="checkbox" name="invoice"'
            f' value="{pk}" id="select-{pk}" aria-label="Select the draft for'
            f' {escape(tenant_name)}, {escape(f"{period_start:%B %Y}")}">'
        )
    number = escape(number) if number else f"Draft #{pk}"
    issued = issue_date.isoformat() if issue_date else "—"
    due = due_date.isoformat() if due_date else "—"
    return SafeString(
        f'<tr data-invoice="{pk}" data-status="{escape(status)}">'
        f'<td class="text-center">{select}</td>'
        f'<td class="text-nowrap"><a class="fw-semibold" href="{escape(detail_prefix)}{pk}/">'
        f"{number}</a></td>"
        f'<td>{escape(tenant_name)} <span class="small text-muted">'
        f"{escape(tenant_slug)}</span></td>"
        f'<td class="text-nowrap">{cost_center}</td>'
        f'<td class="text-nowrap">{timezone.localtime(period_start):%Y-%m}</td>'
        f"<td>{_badge(status)}</td>"
        f'<td class="text-nowrap small">{issued}</td>'
        f'<td class="text-nowrap small">{due}</td>'
        f'<td class="text-end text-nowrap">{money_shown(subtotal)}</td>'
        f'<td class="text-end text-nowrap fw-semibold">{escape(currency)}'
        f" {money_shown(total)}</td>"
        "</tr>"
    )


def usage_line_row(line, *, last_day) -> SafeString:
    """One `<tr>` of an invoice's usage lines (an `InvoiceLine`; `last_day`, the last day of
    its period), as the detail's template wrote it: description, class, period, hours,
    quantity and its unit, unit price, amount."""
    hours = escape(quantity_shown(line.quantity_hours))
    return SafeString(
        '\n      <tr data-line="usage">'
        f"\n        <td>{escape(line.description)}</td>"
        f'\n        <td class="font-monospace small text-nowrap">{escape(line.resource)}</td>'
        f'\n        <td class="text-nowrap small">{timezone.localtime(line.period_start):%Y-%m-%d}'
        f" \u2013 {last_day:%Y-%m-%d}</td>"
        f'\n        <td class="text-end text-nowrap">{hours}</td>'
        f'\n        <td class="text-end text-nowrap">{escape(quantity_shown(line.quantity))}'
        f' <span class="small text-muted">{escape(unit_hours(line.resource, line.unit))}</span>'
        "</td>"
        f'\n        <td class="text-end text-nowrap">{escape(decimal_shown(line.unit_price))}'
        f' <span class="small text-muted">/ {escape(line.unit)}</span></td>'
        f'\n        <td class="text-end text-nowrap">{money_shown(line.amount)}</td>'
        "\n      </tr>\n"
    )


def audit_event_item(event) -> SafeString:
    """One `<li>` of an invoice's audit trail (an `AuditEvent`): when, who, what, and the
    reason or the format of a download. Every download adds one: a trail can be long."""
    changes = event.changes if isinstance(event.changes, dict) else {}
    reason, fmt = changes.get("reason"), changes.get("format")
    action = escape(str(event.action))
    return SafeString(
        f'<li class="list-group-item small" data-action="{action}">'
        f'<span class="text-muted text-nowrap">'
        f"{timezone.localtime(event.created_at):%Y-%m-%d %H:%M}</span>"
        f" · <strong>{escape(str(event.actor_repr or 'system'))}</strong>"
        f' <span class="font-monospace">{action}</span>'
        f"{f': {escape(str(reason))}' if reason else ''}"
        f"{f' ({escape(str(fmt))})' if fmt else ''}</li>"
    )
