"""Deciding on quota requests in Django admin: the review page, single and bulk decisions."""

import datetime
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from core.models import AuditEvent
from tenants.models import Quota, QuotaRequest, Tenant
from tests.factories import GPUFactory, MembershipFactory, NodeFactory, QuotaFactory, TenantFactory

S = QuotaRequest.Status
X = "\N{MULTIPLICATION SIGN}"
CHANGELIST = reverse("admin:tenants_quotarequest_changelist")


def _review(pk):
    return reverse("admin:tenants_quotarequest_change", args=[pk])


@pytest.fixture
def admin_client(login, platform_admin):
    return login(platform_admin)


@pytest.fixture
def h100_fleet(db):
    """One node of 8 H100s, all healthy; another tenant already holds 4 of them."""
    node = NodeFactory(hostname="h100-a")
    for i in range(8):
        GPUFactory(node=node, index=i, model="nvidia-h100-80gb")
    QuotaFactory(tenant=TenantFactory(slug="rival"), resource="gpu:nvidia-h100-80gb", limit=4)


def test_review_page_shows_quota_usage_capacity_and_the_oversubscription_it_would_cause(
    admin_client, submit, granted, h100_fleet
):
    Quota.objects.filter(resource="gpu:nvidia-h100-80gb").exclude(tenant__slug="rival").update(
        in_use=5
    )
    request = submit({"gpu:nvidia-h100-80gb": 4})
    html = admin_client.get(_review(request.pk)).content.decode()
    row = re.search(r'<tr data-resource="gpu:nvidia-h100-80gb">.*?</tr>', html, re.S).group(0)
    cells = [
        " ".join(re.sub(r"<[^>]+>", " ", c).split())
        for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    ]
    # resource, quota now, in use, asked, grant (input), after, healthy, granted, ratio; in use
    # is what the workloads hold (none), the cluster's own figure labelled beside it
    assert cells[1:4] == ["8", "0 cluster reports 5", "+4"]
    assert cells[5] == "12 more than the 8 healthy on the shared pool (nodes reserved for nobody)"
    assert cells[6] == "8 the shared pool (nodes reserved for nobody)"
    assert cells[7] == "12 → 16"  # granted to all tenants: acme 8 + rival 4, then +4
    assert cells[8] == f"1.50{X} → 2.00{X}"
    assert 'name="_approve"' in html and 'name="_reject"' in html
    assert "Fine-tune a 70B model." in html


def test_approve_from_the_review_page(
    admin_client, submit, granted, platform_admin, simulated_gateway
):
    request = submit({"gpu:nvidia-h100-80gb": 4})
    response = admin_client.post(
        _review(request.pk),
        {"_approve": "1", "note": "ok", f"amount_{request.lines.get().pk}": "99"},
    )
    assert response.status_code == 302
    request.refresh_from_db()
    assert request.status == S.APPROVED and request.decided_by == platform_admin
    assert Quota.objects.get(tenant=request.tenant, resource="gpu:nvidia-h100-80gb").limit == 12


def test_approve_with_changed_amounts_from_the_review_page(admin_client, submit, granted):
    request = submit({"gpu:nvidia-h100-80gb": 4, "cpu": 32})
    lines = {line.resource: line.pk for line in request.lines.all()}
    response = admin_client.post(
        _review(request.pk),
        {
            "_approve_changed": "1",
            f"amount_{lines['gpu:nvidia-h100-80gb']}": "2",
            f"amount_{lines['cpu']}": "32",
            "note": "Two now, two next month.",
        },
    )
    assert response.status_code == 302
    limits = dict(Quota.objects.filter(tenant=request.tenant).values_list("resource", "limit"))
    assert limits == {"gpu:nvidia-h100-80gb": 10, "cpu": 96}
    assert AuditEvent.objects.get(action="quota_request.approve_changed").changes["note"] == (
        "Two now, two next month."
    )


def test_recalculate_shows_the_effect_of_changed_amounts_without_deciding(
    admin_client, submit, granted, h100_fleet
):
    request = submit({"gpu:nvidia-h100-80gb": 4})
    line = request.lines.get()
    html = admin_client.post(
        _review(request.pk), {"_preview": "1", f"amount_{line.pk}": "1"}
    ).content.decode()
    ratio = re.search(r'class="num ratio">(.*?)</td>', html, re.S).group(1)
    assert " ".join(re.sub(r"<[^>]+>", " ", ratio).split()) == f"1.50{X} → 1.62{X}"
    assert QuotaRequest.objects.get(pk=request.pk).status == S.SUBMITTED


@pytest.mark.parametrize("amount", ["-1", "x", ""], ids=["negative", "text", "blank"])
def test_bad_amounts_on_the_review_page_are_field_errors(admin_client, submit, amount):
    request = submit({"gpu:nvidia-h100-80gb": 4})
    response = admin_client.post(
        _review(request.pk), {"_approve_changed": "1", f"amount_{request.lines.get().pk}": amount}
    )
    assert response.status_code == 200 and 'class="error"' in response.content.decode()
    assert QuotaRequest.objects.get(pk=request.pk).status == S.SUBMITTED
    assert not Quota.objects.exists()


def test_reject_needs_a_reason(admin_client, submit):
    request = submit()
    line = request.lines.get()
    html = admin_client.post(
        _review(request.pk), {"_reject": "1", "note": "", f"amount_{line.pk}": "8"}
    ).content.decode()
    assert 'id="note-errors"' in html
    assert QuotaRequest.objects.get(pk=request.pk).status == S.SUBMITTED
    admin_client.post(
        _review(request.pk), {"_reject": "1", "note": "No capacity.", f"amount_{line.pk}": "8"}
    )
    request.refresh_from_db()
    assert request.status == S.REJECTED and request.decision_note == "No capacity."


def test_a_decided_request_shows_read_only_and_a_late_decision_is_refused(
    admin_client, submit, platform_admin
):
    from tenants.quota import services as quota_requests

    request = submit()
    line = request.lines.get()
    quota_requests.quota_request_reject(request_id=request.pk, approver=platform_admin, reason="no")
    html = admin_client.get(_review(request.pk)).content.decode()
    assert 'name="_approve"' not in html and "Reason:" in html
    response = admin_client.post(
        _review(request.pk), {"_approve": "1", f"amount_{line.pk}": "8"}, follow=True
    )
    assert "someone decided first" in response.content.decode()
    assert QuotaRequest.objects.get(pk=request.pk).status == S.REJECTED
    assert not Quota.objects.exists()


def test_bulk_approve_and_bulk_reject_with_a_reason(admin_client, submit, tenant):
    first, second, third = submit({"cpu": 1}), submit({"cpu": 2}), submit({"memory-gib": 8})
    # Approve shows the impact first, then decides.
    page = admin_client.post(
        CHANGELIST, {"action": "approve_selected", "_selected_action": [first.pk, second.pk]}
    )
    assert page.status_code == 200 and 'id="approve-form"' in page.content.decode()
    assert not QuotaRequest.objects.exclude(status=S.SUBMITTED).exists()
    admin_client.post(
        CHANGELIST,
        {"action": "approve_selected", "_selected_action": [first.pk, second.pk], "apply": "1"},
    )
    assert set(QuotaRequest.objects.filter(status=S.APPROVED).values_list("pk", flat=True)) == {
        first.pk,
        second.pk,
    }
    assert Quota.objects.get(tenant=tenant, resource="cpu").limit == 3

    # Reject asks for a reason first, then decides.
    page = admin_client.post(
        CHANGELIST, {"action": "reject_selected", "_selected_action": [first.pk, third.pk]}
    )
    assert page.status_code == 200 and 'id="reject-form"' in page.content.decode()
    assert QuotaRequest.objects.get(pk=third.pk).status == S.SUBMITTED
    admin_client.post(
        CHANGELIST,
        {
            "action": "reject_selected",
            "_selected_action": [first.pk, third.pk],
            "apply": "1",
            "reason": "Over budget.",
        },
    )
    assert QuotaRequest.objects.get(pk=third.pk).status == S.REJECTED
    assert QuotaRequest.objects.get(pk=first.pk).status == S.APPROVED  # skipped: decided
    assert AuditEvent.objects.filter(action="quota_request.reject").count() == 1


def test_queue_filters_by_state_tenant_resource_and_age(
    admin_client, submit, tenant, platform_admin
):
    from tenants.quota import services as quota_requests

    gpu, cpu, old = submit({"gpu:nvidia-l40s": 2}), submit({"cpu": 4}), submit({"memory-gib": 8})
    QuotaRequest.objects.filter(pk=old.pk).update(
        created_at=timezone.now() - datetime.timedelta(days=10)
    )
    quota_requests.quota_request_reject(request_id=cpu.pk, approver=platform_admin, reason="no")
    other = TenantFactory(slug="other")
    outsider = MembershipFactory(tenant=other, role="owner").user
    theirs = submit({"cpu": 1}, by=outsider, target=other)

    def shown(query):
        html = admin_client.get(CHANGELIST + query).content.decode()
        return {
            int(n) for n in re.findall(r'<a href="/admin/tenants/quotarequest/(\d+)/change/', html)
        }

    assert shown("?status__exact=submitted") == {gpu.pk, old.pk, theirs.pk}
    assert shown(f"?tenant__id__exact={other.pk}") == {theirs.pk}
    assert shown("?resource=gpu:nvidia-l40s") == {gpu.pk}
    assert shown("?age=month") == {old.pk}
    assert shown("?age=day") == {gpu.pk, cpu.pk, theirs.pk}


def test_queue_filters_by_a_typed_tenant_slug_and_lists_no_tenant_it_was_not_asked_for(
    admin_client, submit, tenant
):
    mine = submit({"cpu": 2})
    other = TenantFactory(slug="other", name="Other Lab")
    outsider = MembershipFactory(tenant=other, role="owner").user
    theirs = submit({"cpu": 1}, by=outsider, target=other)
    TenantFactory(slug="idle-lab", name="Idle Lab")  # no request: nothing to show of it

    page = admin_client.get(CHANGELIST + "?status__exact=submitted").content.decode()
    assert "idle-lab" not in page and "Idle Lab" not in page
    # The one-input filter keeps the page's other parameters when it is submitted.
    assert re.search(r'<input type="hidden" name="status__exact" value="submitted">', page)
    assert re.search(r'<input type="search" aria-label="Tenant slug" name="tenant"', page)

    def shown(query):
        html = admin_client.get(CHANGELIST + query).content.decode()
        return {
            int(n) for n in re.findall(r'<a href="/admin/tenants/quotarequest/(\d+)/change/', html)
        }

    assert shown("?tenant=other") == {theirs.pk}
    assert shown(f"?tenant={tenant.slug}&status__exact=submitted") == {mine.pk}
    assert shown("?tenant=nobody") == set()
    assert shown("?q=Other+Lab") == {theirs.pk}


def test_queue_rows_load_no_password_hash_and_no_decision_fields(
    admin_client, submit, django_assert_max_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    submit({"cpu": 1})
    with CaptureQueriesContext(connection) as captured:
        assert admin_client.get(CHANGELIST).status_code == 200
    rows = [q["sql"] for q in captured.captured_queries
            if 'FROM "tenants_quotarequest"' in q["sql"] and "COUNT(" not in q["sql"]]
    assert rows
    for sql in rows:
        assert '"password"' not in sql
        assert '"decision_note"' not in sql and '"justification"' not in sql


def test_queue_rows_name_their_tenant_and_requester_and_the_count_joins_nothing(
    admin_client, submit
):
    """Each row shows its tenant's name and its requester's username, read in the rows' own
    query; the count of the queue (every page asks it) reads the requests alone."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    request = submit({"cpu": 1})
    with CaptureQueriesContext(connection) as captured:
        response = admin_client.get(CHANGELIST + "?status__exact=submitted")
    counts = [q["sql"] for q in captured.captured_queries
              if 'FROM "tenants_quotarequest"' in q["sql"] and "COUNT(" in q["sql"]]
    assert counts and all("JOIN" not in sql for sql in counts)
    row = re.search(rf'<tr>.*?/quotarequest/{request.pk}/change/.*?</tr>',
                    response.content.decode(), re.S).group(0)
    assert f'<td class="field-tenant_name">{request.tenant.name}</td>' in row
    assert f'<td class="field-requester">{request.requested_by.username}</td>' in row


def test_show_all_serves_the_400_requests_a_fleet_has_awaiting_review(
    admin_client, tenant, tenant_member
):
    QuotaRequest.objects.bulk_create(
        QuotaRequest(tenant=tenant, requested_by=tenant_member, justification=f"Run {n}.")
        for n in range(250)
    )
    html = admin_client.get(CHANGELIST + "?status__exact=submitted&all=").content.decode()
    assert len(re.findall(r'<a href="/admin/tenants/quotarequest/\d+/change/', html)) == 250


def test_queue_query_count_does_not_grow_with_requests(
    admin_client, submit, django_assert_max_num_queries
):
    submit({"cpu": 1})
    admin_client.get(CHANGELIST)
    with django_assert_max_num_queries(20) as few:
        admin_client.get(CHANGELIST)
    for n in range(15):
        submit({"cpu": n + 1, "gpu:nvidia-l40s": 1})
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert admin_client.get(CHANGELIST).status_code == 200


def test_admin_edit_of_a_tenant_goes_through_services_and_is_re_enforced(
    admin_client, tenant, django_capture_on_commit_callbacks, simulated_gateway
):
    url = reverse("admin:tenants_tenant_change", args=[tenant.pk])
    data = {
        "name": "Acme Labs",
        "cost_center": "CC-1",
        "status": "active",
        "isolation": "shared",
        "cohort": "pool",
        "keycloak_group": "",
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
        "quotas-TOTAL_FORMS": "1",
        "quotas-INITIAL_FORMS": "0",
        "quotas-0-resource": "gpu:nvidia-l40s",
        "quotas-0-limit": "8",
        "quotas-0-borrowing_limit": "2",
        "quotas-0-lending_limit": "4",
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    tenant.refresh_from_db()
    assert tenant.cohort == "pool" and tenant.applied_version == tenant.desired_version > 1
    quota = Quota.objects.get(tenant=tenant)
    assert (quota.limit, quota.borrowing_limit, quota.lending_limit) == (8, 2, 4)
    assert AuditEvent.objects.filter(action="tenant.update").exists()
    assert AuditEvent.objects.filter(action="quota.set").exists()


def test_admin_refuses_lending_by_a_shared_tenant_and_a_bad_slug(admin_client):
    response = admin_client.post(
        reverse("admin:tenants_tenant_add"),
        {
            "slug": "Not_A_Label",
            "name": "X",
            "status": "active",
            "isolation": "shared",
            "cohort": "pool",
            "lends_reserved_gpus": "on",
            "memberships-TOTAL_FORMS": "0",
            "memberships-INITIAL_FORMS": "0",
            "quotas-TOTAL_FORMS": "0",
            "quotas-INITIAL_FORMS": "0",
        },
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "lowercase letters, digits" in html
    assert "Only a dedicated tenant has reserved GPUs to lend." in html
    assert not Tenant.objects.filter(name="X").exists()


@pytest.mark.parametrize("object_id", ["abc", "99999999999999999999", "0"])
def test_review_page_of_a_malformed_or_missing_id_redirects_instead_of_crashing(
    admin_client, object_id
):
    response = admin_client.get(_review(object_id))
    assert response.status_code == 302 and response["Location"] == reverse("admin:index")


def test_a_request_that_waited_past_its_end_date_cannot_be_approved(admin_client, submit, granted):
    request = submit(
        {"gpu:nvidia-h100-80gb": 4}, ends_on=timezone.localdate() + datetime.timedelta(days=1)
    )
    QuotaRequest.objects.filter(pk=request.pk).update(
        ends_on=timezone.localdate() - datetime.timedelta(days=1)
    )
    line = request.lines.get()
    html = admin_client.post(
        _review(request.pk), {"_approve": "1", f"amount_{line.pk}": "4"}
    ).content.decode()
    assert "which has passed" in html
    assert QuotaRequest.objects.get(pk=request.pk).status == S.SUBMITTED
    assert Quota.objects.get(tenant=request.tenant, resource="gpu:nvidia-h100-80gb").limit == 8
    response = admin_client.post(
        CHANGELIST,
        {"action": "approve_selected", "_selected_action": [request.pk], "apply": "1"},
        follow=True,
    )
    assert "whose end date has passed" in response.content.decode()
    assert QuotaRequest.objects.get(pk=request.pk).status == S.SUBMITTED
