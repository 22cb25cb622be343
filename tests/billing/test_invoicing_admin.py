"""Billing in Django admin: every write through a service, errors as form errors, an issued
invoice read-only, bulk actions reporting per invoice."""

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from billing.models import BillingAccount, BudgetAlert, CreditNote, Invoice, Rate, UsageRecord
from billing.services import invoicing
from core.models import AuditEvent
from tests.factories import TenantFactory

H100 = "gpu:nvidia-h100-80gb"
JAN = date(2026, 1, 1)
CHANGELIST = "/admin/billing/invoice/"


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.fixture
def rate(db):
    return Rate.objects.create(
        resource=H100, unit_price=Decimal("2.50"), valid_from=utc(2025, 1, 1)
    )


def draft_for(tenant, hours: int = 1) -> Invoice:
    for n in range(hours):
        UsageRecord.objects.create(
            tenant=tenant, source="allocated", resource=H100, hour=utc(2026, 1, 2, n),
            unit_seconds=3600,
        )
    return invoicing.invoice_compute(tenant=tenant, month=JAN)


def rate_form(**fields) -> dict:
    data = {
        "resource": H100, "unit_price": "3.00", "unit": "hour",
        "valid_from_0": "2026-03-01", "valid_from_1": "00:00:00",
        "valid_to_0": "", "valid_to_1": "", "note": "",
    }
    return data | fields


# --- rates ------------------------------------------------------------------------------------


def test_a_rate_added_in_admin_goes_through_the_service(login, platform_admin):
    response = login(platform_admin).post("/admin/billing/rate/add/", rate_form())

    assert response.status_code == 302, response.content.decode()[:3000]
    assert Rate.objects.get().unit_price == Decimal("3.00")
    assert AuditEvent.objects.get(action="rate.create").actor == platform_admin


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"valid_from_0": "2026-01-01"}, "periods overlap"),
        ({"unit_price": "-1"}, "negative price"),
        ({"resource": "gpu:nvidia-h999"}, "Select a valid choice"),
        ({"valid_from_1": "00:30:00"}, "is not on the hour"),
        ({"valid_to_0": "2025-06-01", "valid_to_1": "00:00:00",
          "valid_from_0": "2025-07-01"}, "not after valid_from"),
    ],
)
def test_bad_rates_are_form_errors_and_change_nothing(login, platform_admin, rate, fields, error):
    response = login(platform_admin).post("/admin/billing/rate/add/", rate_form(**fields))

    assert response.status_code == 200
    assert error in response.content.decode()
    assert list(Rate.objects.values_list("pk", flat=True)) == [rate.pk]
    assert not AuditEvent.objects.filter(action__startswith="rate.").exists()


def test_a_rate_behind_an_issued_invoice_is_neither_changed_nor_deleted_in_admin(
    login, platform_admin, finance, tenant, rate
):
    invoicing.invoice_issue(invoice_id=draft_for(tenant).pk, actor=finance)
    client = login(platform_admin)

    changed = client.post(
        f"/admin/billing/rate/{rate.pk}/change/",
        rate_form(valid_from_0="2025-01-01", unit_price="9.00"),
    )
    deleted = client.post(f"/admin/billing/rate/{rate.pk}/delete/", {"post": "yes"},
                          HTTP_REFERER=f"http://testserver/admin/billing/rate/{rate.pk}/change/")

    assert changed.status_code == 200
    assert "issue new rates from a later date" in changed.content.decode()
    assert deleted.status_code == 302
    assert Rate.objects.get(pk=rate.pk).unit_price == Decimal("2.50")
    followed = client.get(deleted["Location"])
    assert "cannot be deleted" in followed.content.decode()


# --- billing accounts -------------------------------------------------------------------------


def test_a_budget_set_in_admin_is_audited(login, platform_admin, tenant):
    response = login(platform_admin).post(
        "/admin/billing/billingaccount/add/",
        {"tenant": tenant.pk, "monthly_budget": "500.00", "discount_percent": "5"},
    )

    assert response.status_code == 302, response.content.decode()[:3000]
    account = BillingAccount.objects.get(tenant=tenant)
    assert (account.monthly_budget, account.discount_percent) == (Decimal("500"), Decimal("5"))
    event = AuditEvent.objects.get(action="billing_account.update")
    assert event.changes["after"]["monthly_budget"] == "500.00"


def test_a_discount_over_100_percent_is_a_form_error(login, platform_admin, tenant):
    response = login(platform_admin).post(
        "/admin/billing/billingaccount/add/",
        {"tenant": tenant.pk, "monthly_budget": "0", "discount_percent": "150"},
    )

    assert response.status_code == 200
    assert not BillingAccount.objects.exists()


# --- invoices ---------------------------------------------------------------------------------


def test_the_invoice_list_filters_and_searches(login, platform_admin, finance, tenant,
                                               other_tenant, rate):
    issued = invoicing.invoice_issue(invoice_id=draft_for(tenant).pk, actor=finance)
    draft = draft_for(other_tenant, hours=2)
    client = login(platform_admin)

    page = client.get(CHANGELIST).content.decode()
    assert issued.number in page and "Globex Corp" in page
    assert 'class="status-issued"' in page and 'class="status-draft"' in page
    only_issued = client.get(CHANGELIST, {"status__exact": "issued"}).context["cl"].result_list
    assert list(only_issued) == [issued]
    january = client.get(CHANGELIST, {"period": "2026-01"}).context["cl"].result_list
    assert set(january) == {issued, draft}
    assert list(client.get(CHANGELIST, {"period": "2025-12"}).context["cl"].result_list) == []
    found = client.get(CHANGELIST, {"q": "globex"}).context["cl"].result_list
    assert list(found) == [draft]


def test_an_issued_invoice_is_read_only_in_admin(login, platform_admin, finance, tenant, rate):
    invoice = invoicing.invoice_issue(invoice_id=draft_for(tenant).pk, actor=finance)
    line = invoice.lines.get()
    client = login(platform_admin)

    page = client.get(f"/admin/billing/invoice/{invoice.pk}/change/")
    posted = client.post(
        f"/admin/billing/invoice/{invoice.pk}/change/",
        {"total": "0", "lines-TOTAL_FORMS": "1", "lines-INITIAL_FORMS": "1",
         "lines-0-id": line.pk, "lines-0-amount": "0"},
    )

    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()
    assert invoice.number in page.content.decode()
    assert posted.status_code == 403
    invoice.refresh_from_db()
    line.refresh_from_db()
    assert invoice.total == line.amount == Decimal("2.50")
    assert client.post(f"/admin/billing/invoice/{invoice.pk}/delete/", {"post": "yes"}
                       ).status_code == 403
    assert client.get("/admin/billing/invoice/add/").status_code == 403


def _act(client, action: str, invoices, **extra):
    return client.post(
        CHANGELIST,
        {"action": action, "_selected_action": [invoice.pk for invoice in invoices], **extra},
        follow=True,
    )


def test_issue_selected_in_bulk_reports_each_refusal(login, platform_admin, finance, rate):
    tenants = [TenantFactory(slug=f"bulk-{n}") for n in range(3)]
    drafts = [draft_for(tenant) for tenant in tenants]
    already = invoicing.invoice_issue(invoice_id=drafts[0].pk, actor=finance)
    client = login(platform_admin)

    asked = _act(client, "issue_selected", drafts)

    page = asked.content.decode()
    year = date.today().year
    assert "Issuing cannot be undone" in page
    # Each draft named with the number it takes, its tenant and its total; nothing issued yet.
    for draft, number in zip(drafts[1:], (2, 3), strict=True):
        draft.refresh_from_db()
        row = page.split(f'data-invoice="{draft.pk}"')[1].split("</tr>")[0]
        assert f"INV-{year}-000{number}" in row and draft.tenant_name in row
        assert f"{draft.total} {draft.currency}" in row
    assert "1 selected invoice is not a draft" in page
    assert Invoice.objects.filter(status="issued").count() == 1
    confirm = asked.context["form"]["confirm"].value()

    response = _act(client, "issue_selected", drafts, apply="1", confirm=confirm)

    text = response.content.decode()
    assert "Issued 2 invoice(s)" in text
    assert f"{already.number} cannot go from issued to issued" in text
    assert Invoice.objects.filter(status="issued").count() == 3
    numbers = sorted(Invoice.objects.values_list("number", flat=True))
    assert numbers == [f"INV-{year}-000{n}" for n in (1, 2, 3)]
    assert AuditEvent.objects.filter(action="invoice.issue", actor=platform_admin).count() == 2


def test_issue_selected_asks_again_when_a_number_was_taken_meanwhile(
    login, platform_admin, finance, rate
):
    drafts = [draft_for(TenantFactory(slug=f"race-{n}")) for n in range(2)]
    client = login(platform_admin)
    confirm = _act(client, "issue_selected", drafts).context["form"]["confirm"].value()
    # Someone else issues a third draft first: the numbers confirmed are no longer true.
    invoicing.invoice_issue(invoice_id=draft_for(TenantFactory(slug="race-x")).pk, actor=finance)

    response = _act(client, "issue_selected", drafts, apply="1", confirm=confirm)

    assert "Numbers or totals changed since you were asked" in response.content.decode()
    assert Invoice.objects.filter(pk__in=[d.pk for d in drafts], status="draft").count() == 2


def test_recompute_drafts_leaves_issued_ones_alone(login, platform_admin, finance, tenant,
                                                  other_tenant, rate):
    draft = draft_for(tenant)
    issued = invoicing.invoice_issue(invoice_id=draft_for(other_tenant).pk, actor=finance)
    UsageRecord.objects.create(tenant=tenant, source="allocated", resource=H100,
                               hour=utc(2026, 1, 20), unit_seconds=3600)
    UsageRecord.objects.create(tenant=other_tenant, source="allocated", resource=H100,
                               hour=utc(2026, 1, 20), unit_seconds=3600)

    response = _act(login(platform_admin), "recompute_drafts", [draft, issued])

    assert "Recomputed 1 invoice(s)" in response.content.decode()
    assert Invoice.objects.get(pk=draft.pk).total == Decimal("5.00")
    assert Invoice.objects.get(pk=issued.pk).total == Decimal("2.50")


def test_mark_paid_asks_for_a_reference(login, platform_admin, finance, tenant, rate):
    invoice = invoicing.invoice_issue(invoice_id=draft_for(tenant).pk, actor=finance)
    client = login(platform_admin)

    form = _act(client, "mark_paid", [invoice])
    assert "Payment reference" in form.content.decode()
    assert Invoice.objects.get(pk=invoice.pk).status == "issued"
    _act(client, "mark_paid", [invoice], apply="1", reference="SEPA-2026-77")

    invoice.refresh_from_db()
    assert (invoice.status, invoice.payment_reference) == ("paid", "SEPA-2026-77")
    assert AuditEvent.objects.get(action="invoice.pay").actor == platform_admin


def test_void_needs_a_reason(login, platform_admin, finance, tenant, rate):
    invoice = invoicing.invoice_issue(invoice_id=draft_for(tenant).pk, actor=finance)
    client = login(platform_admin)

    refused = _act(client, "void_selected", [invoice], apply="1", reason="")
    assert "This field is required" in refused.content.decode()
    assert Invoice.objects.get(pk=invoice.pk).status == "issued"
    _act(client, "void_selected", [invoice], apply="1", reason="Billed the wrong tenant")

    invoice.refresh_from_db()
    assert (invoice.status, invoice.void_reason) == ("void", "Billed the wrong tenant")


def test_a_month_is_drafted_from_the_invoice_list(login, platform_admin, tenant, other_tenant,
                                                 rate):
    for who in (tenant, other_tenant):
        UsageRecord.objects.create(tenant=who, source="allocated", resource=H100,
                                   hour=utc(2026, 1, 9), unit_seconds=3600)
    client = login(platform_admin)

    assert 'id="draft-month"' in client.get(CHANGELIST).content.decode()
    page = client.get(f"{CHANGELIST}draft-month/")
    assert page.status_code == 200 and 'type="month"' in page.content.decode()
    this_month = f"{date.today():%Y-%m}"
    refused = client.post(f"{CHANGELIST}draft-month/", {"month": this_month})
    assert "has not ended yet" in refused.content.decode()
    assert Invoice.objects.count() == 0
    response = client.post(f"{CHANGELIST}draft-month/", {"month": "2026-01"})

    assert response.status_code == 302
    assert response["Location"] == f"{CHANGELIST}?period=2026-01"
    assert sorted(Invoice.objects.values_list("tenant_name", "status")) == [
        ("Acme Labs", "draft"), ("Globex Corp", "draft"),
    ]
    assert AuditEvent.objects.filter(action="invoice.compute", actor=platform_admin).count() == 2


def test_only_platform_admins_reach_the_billing_admin(login, finance, tenant_owner):
    for user in (finance, tenant_owner):
        client = login(user)
        assert client.get(f"{CHANGELIST}draft-month/").status_code == 302  # to the admin login
        client.post(f"{CHANGELIST}draft-month/", {"month": "2026-01"})
        client.logout()
    assert Invoice.objects.count() == 0


# --- credit notes and budget alerts -----------------------------------------------------------


def test_a_credit_note_is_created_through_the_service_and_never_edited(
    login, platform_admin, finance, tenant, rate
):
    invoice = invoicing.invoice_issue(invoice_id=draft_for(tenant, hours=4).pk, actor=finance)
    client = login(platform_admin)

    too_much = client.post("/admin/billing/creditnote/add/",
                           {"invoice": invoice.pk, "amount": "10.01", "reason": "Outage"})
    assert too_much.status_code == 200
    assert "more than is left" in too_much.content.decode()
    assert CreditNote.objects.count() == 0
    created = client.post("/admin/billing/creditnote/add/",
                          {"invoice": invoice.pk, "amount": "4.00", "reason": "Outage"})

    assert created.status_code == 302, created.content.decode()[:3000]
    note = CreditNote.objects.get()
    assert note.number == f"CN-{date.today().year}-0001" and note.created_by == platform_admin
    assert AuditEvent.objects.get(action="credit_note.create").changes["amount"] == "4.00"
    assert client.post(f"/admin/billing/creditnote/{note.pk}/change/",
                       {"invoice": invoice.pk, "amount": "1.00", "reason": "x"}
                       ).status_code == 403
    assert CreditNote.objects.get().amount == Decimal("4.00")


def test_a_draft_takes_no_credit_note_in_admin(login, platform_admin, tenant, rate):
    draft = draft_for(tenant)

    response = login(platform_admin).post(
        "/admin/billing/creditnote/add/", {"invoice": draft.pk, "amount": "1", "reason": "x"}
    )

    assert response.status_code == 200 and CreditNote.objects.count() == 0


def test_budget_alerts_are_read_only_in_admin(login, platform_admin, tenant):
    alert = BudgetAlert.objects.create(
        tenant=tenant, month=date(2026, 1, 1), threshold=80, spent=Decimal("80"),
        budget=Decimal("100"),
    )
    client = login(platform_admin)

    assert client.get("/admin/billing/budgetalert/").status_code == 200
    assert client.get("/admin/billing/budgetalert/add/").status_code == 403
    assert client.post(f"/admin/billing/budgetalert/{alert.pk}/delete/",
                       {"post": "yes"}).status_code == 403


# --- no N+1 on the lists ----------------------------------------------------------------------


def _grow_billing(finance, n: int) -> None:
    for _ in range(n):
        tenant = TenantFactory()
        invoice = invoicing.invoice_issue(invoice_id=draft_for(tenant).pk, actor=finance)
        invoicing.credit_note_create(invoice_id=invoice.pk, actor=finance,
                                     amount=Decimal("1.00"), reason="goodwill")
        BudgetAlert.objects.create(tenant=tenant, month=date(2026, 1, 1), threshold=80,
                                   spent=Decimal("80"), budget=Decimal("100"))
        year = 2000 + Rate.objects.filter(resource="cpu").count()
        Rate.objects.create(resource="cpu", unit_price=Decimal("0.04"),
                            valid_from=utc(year, 1, 1), valid_to=utc(year + 1, 1, 1))


@pytest.mark.parametrize(
    "url",
    [
        CHANGELIST, f"{CHANGELIST}?status__exact=issued&period=2026-01",
        "/admin/billing/rate/", "/admin/billing/creditnote/", "/admin/billing/budgetalert/",
        "/admin/billing/billingaccount/",
    ],
)
def test_billing_admin_lists_make_the_same_queries_at_two_sizes(
    login, platform_admin, finance, rate, url
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = login(platform_admin)
    _grow_billing(finance, 2)
    client.get(url)
    with CaptureQueriesContext(connection) as few:
        assert client.get(url).status_code == 200
    _grow_billing(finance, 6)
    with CaptureQueriesContext(connection) as many:
        assert client.get(url).status_code == 200

    assert len(many) == len(few), "\n".join(q["sql"] for q in many.captured_queries)


def test_every_billing_admin_page_renders(login, platform_admin, finance, tenant, rate):
    invoice = invoicing.invoice_issue(invoice_id=draft_for(tenant).pk, actor=finance)
    note = invoicing.credit_note_create(invoice_id=invoice.pk, actor=finance,
                                        amount=Decimal("1.00"), reason="goodwill")
    account = BillingAccount.objects.get(tenant=tenant)
    client = login(platform_admin)

    for url in [
        "/admin/billing/", "/admin/billing/rate/add/", f"/admin/billing/rate/{rate.pk}/change/",
        f"/admin/billing/billingaccount/{account.pk}/change/",
        f"/admin/billing/invoice/{invoice.pk}/change/", "/admin/billing/creditnote/add/",
        f"/admin/billing/creditnote/{note.pk}/change/",
    ]:
        response = client.get(url)
        assert response.status_code == 200, url
    page = client.get(f"/admin/billing/invoice/{invoice.pk}/change/").content.decode()
    assert note.number in page and "goodwill" in page
