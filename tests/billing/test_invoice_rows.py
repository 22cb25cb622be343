"""The invoice list's rows and an invoice's trail as people see them: every value shown,
hostile names escaped, periods in the portal's time zone."""

import pytest

from billing.models import Invoice
from billing.services import invoicing
from core.audit import audit

from .finance_data import FEB, JAN, bill, tenant_with_cost_center

pytestmark = pytest.mark.django_db


def _page_rows(client, query="?sort=number") -> dict[int, str]:
    html = client.get(f"/billing/invoices/{query}").content.decode()
    rows = {}
    for part in html.split('<tr data-invoice="')[1:]:
        pk = int(part[: part.index('"')])
        rows[pk] = '<tr data-invoice="' + part[: part.index("</tr>") + len("</tr>")]
    return rows


def test_every_kind_of_row_shows_its_values_escaped(login, finance):
    odd = tenant_with_cost_center("odd", '<script>alert(1)</script> & "Co"', "<CC&1>")
    plain = tenant_with_cost_center("plain", "Plain", "")
    issued = invoicing.invoice_issue(invoice_id=bill(odd, JAN, 700).pk, actor=finance)
    paid = invoicing.invoice_issue(invoice_id=bill(plain, JAN, 3).pk, actor=finance)
    invoicing.invoice_mark_paid(invoice_id=paid.pk, actor=finance)
    draft = bill(odd, FEB, 1)

    rows = _page_rows(login(finance))

    assert set(rows) == set(Invoice.objects.values_list("pk", flat=True))
    hostile = rows[draft.pk]
    assert "<script>" not in "".join(rows.values())
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;Co&quot;" in hostile
    assert '<span class="font-monospace small">&lt;CC&amp;1&gt;</span>' in hostile
    assert f'value="{draft.pk}" id="select-{draft.pk}"' in hostile
    assert f">Draft #{draft.pk}</a>" in hostile
    assert 'data-status="draft">Draft</span>' in hostile
    assert "draft-check" not in rows[issued.pk]
    assert f">{issued.number}</a>" in rows[issued.pk]
    assert 'data-status="paid">Paid</span>' in rows[paid.pk]
    assert '<span class="text-muted small">—</span>' in rows[paid.pk]  # no cost center
    assert f'href="/billing/invoices/{paid.pk}/"' in rows[paid.pk]


def test_a_listed_row_follows_its_changes_and_the_time_zone(login, finance, settings):
    tenant = tenant_with_cost_center("odd", "Odd", "CC1")
    draft = bill(tenant, JAN, 3)
    client = login(finance)
    before = _page_rows(client)[draft.pk]

    Invoice.objects.filter(pk=draft.pk).update(tenant_name="Renamed <Co>", currency="CHF")
    renamed = _page_rows(client)[draft.pk]
    settings.TIME_ZONE = "America/New_York"  # the period's first instant is in December there
    new_york = _page_rows(client)[draft.pk]

    assert "Odd" in before and "Renamed &lt;Co&gt;" in renamed and "CHF " in renamed
    assert '<td class="text-nowrap">2026-01</td>' in renamed
    assert '<td class="text-nowrap">2025-12</td>' in new_york


def test_the_trail_shows_each_event_escaped(login, finance):
    invoice = bill(tenant_with_cost_center("trail", "Trail", ""), JAN, 1)
    audit(actor=finance, action="invoice.export", obj=invoice, changes={"format": "pdf"})
    audit(actor=None, action="invoice.void", obj=invoice,
          changes={"reason": '<script>x</script> "wrong"', "total": "1.00"})

    html = login(finance).get(f"/billing/invoices/{invoice.pk}/").content.decode()

    assert "<script>x" not in html
    assert "invoice.void</span>: &lt;script&gt;x&lt;/script&gt; &quot;wrong&quot;</li>" in html
    assert "<strong>system</strong>" in html
    assert "invoice.export</span> (pdf)</li>" in html
