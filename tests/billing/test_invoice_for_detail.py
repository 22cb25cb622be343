"""invoice_for_detail reads one invoice with the names of its tenant and people annotated: the
same as its relations say, and only where invoices_visible_to would find it (a tenant's people
see their tenant's issued invoices; a draft or another tenant's is a 404)."""

from datetime import UTC, date, datetime

import pytest
from django.contrib.auth import get_user_model
from django.http import Http404

from billing.models import CreditNote, Invoice
from billing.selectors.finance import invoice_for_detail
from billing.selectors.invoices import invoices_visible_to

from .spend_data import issued_invoice

pytestmark = pytest.mark.django_db

MONTH = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def invoices(tenant, other_tenant, finance):
    issuer = get_user_model().objects.create_user(
        "issuer", first_name="Ida", last_name="<Issuer>")
    payer = get_user_model().objects.create_user("payer")
    ours = issued_invoice(tenant, number="INV-1", month=MONTH, status="draft")
    Invoice.objects.filter(pk=ours.pk).update(issued_by=issuer, paid_by=payer, status="paid")
    CreditNote.objects.create(invoice=ours, number="CN-1", amount="1.00", reason="outage",
                              issue_date=date(2026, 4, 2), created_by=finance)
    voided = issued_invoice(tenant, number="INV-2", month=MONTH.replace(month=4),
                            status="draft")
    Invoice.objects.filter(pk=voided.pk).update(voided_by=payer, status="void")
    return {
        "ours": ours,
        "voided": voided,
        "draft": issued_invoice(tenant, number="", month=MONTH.replace(month=5), status="draft"),
        "theirs": issued_invoice(other_tenant, number="INV-3", month=MONTH),
    }


def _shown(invoice: Invoice) -> tuple:
    issuer, payer, voider = invoice.issued_by, invoice.paid_by, invoice.voided_by
    return (
        invoice.pk, invoice.number, invoice.status, invoice.total, invoice.tenant.slug,
        issuer and issuer.username, issuer and issuer.first_name, issuer and issuer.last_name,
        payer and payer.username, voider and voider.username,
        invoice.credit_notes.exists(), [line.pk for line in invoice.lines.all()],
    )


def _read(invoice: Invoice) -> tuple:
    return (
        invoice.pk, invoice.number, invoice.status, invoice.total, invoice.tenant_slug,
        invoice.issued_by_username, invoice.issued_by_first_name, invoice.issued_by_last_name,
        invoice.paid_by_username, invoice.voided_by_username,
        bool(invoice.credit_notes.all()), [line.pk for line in invoice.lines.all()],
    )


def test_an_invoice_is_read_with_the_names_the_orm_reads(invoices, finance):
    for invoice in invoices.values():
        read = invoice_for_detail(user=finance, invoice_id=invoice.pk)
        assert _read(read) == _shown(Invoice.objects.get(pk=invoice.pk))
        assert [note.number for note in read.credit_notes.all()] == (
            ["CN-1"] if invoice is invoices["ours"] else [])


def test_an_invoice_is_read_in_the_same_queries_whatever_it_holds(
        invoices, finance, django_assert_num_queries):
    # Credit notes and payments are read whether there are any: no count hangs on the data.
    invoices_visible_to(finance)  # the user's roles, read once per request
    for invoice in invoices.values():
        with django_assert_num_queries(4):
            read = invoice_for_detail(user=finance, invoice_id=invoice.pk)
            list(read.lines.all()), list(read.credit_notes.all()), list(read.payments.all())


def test_only_what_invoices_visible_to_finds_is_found(invoices, finance, tenant_member,
                                                       other_tenant_member, no_role_user):
    for user in (finance, tenant_member, other_tenant_member, no_role_user):
        visible = set(invoices_visible_to(user).values_list("pk", flat=True))
        for invoice in invoices.values():
            if invoice.pk in visible:
                assert invoice_for_detail(user=user, invoice_id=invoice.pk).pk == invoice.pk
            else:
                with pytest.raises(Http404):
                    invoice_for_detail(user=user, invoice_id=invoice.pk)
    assert {invoices["ours"].pk, invoices["voided"].pk} == set(
        invoices_visible_to(tenant_member).values_list("pk", flat=True))
    with pytest.raises(Http404):
        invoice_for_detail(user=finance, invoice_id=10**9)
