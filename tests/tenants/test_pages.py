"""Tenant pages: dashboard, quota, the request form with its htmx preview, history, members."""

import datetime
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from core.models import AuditEvent
from tenants.models import Membership, QuotaRequest, Source
from tenants.quota import services as quota_requests
from tests.factories import GPUFactory, MembershipFactory, NodeFactory, QuotaFactory, UserFactory

S = QuotaRequest.Status
NEW = "tenants:quota-request-create"


def _form(lines, justification="Eval sweep for the Q3 models.", ends_on="", extra=None):
    data = {
        "lines-TOTAL_FORMS": str(len(lines)),
        "lines-INITIAL_FORMS": "0",
        "lines-MIN_NUM_FORMS": "1",
        "lines-MAX_NUM_FORMS": "1000",
        "justification": justification,
        "ends_on": ends_on,
    }
    for i, (resource, amount) in enumerate(lines):
        data[f"lines-{i}-resource"] = resource
        data[f"lines-{i}-amount"] = str(amount)
    return data | (extra or {})


@pytest.fixture
def fleet(db):
    """Two H100 nodes: 16 GPUs, 15 of them healthy."""
    for n in range(2):
        node = NodeFactory(hostname=f"h100-{n}")
        for i in range(8):
            GPUFactory(
                node=node,
                index=i,
                model="nvidia-h100-80gb",
                health="degraded" if (n, i) == (1, 7) else "healthy",
            )


def test_dashboard_shows_quota_bars_recent_requests_members_and_cluster_state(
    login, tenant_member, tenant_owner, tenant, granted, submit
):
    submit({"gpu:nvidia-h100-80gb": 4})
    html = login(tenant_member).get(reverse("tenants:dashboard", args=["acme"])).content.decode()
    assert "NVIDIA H100 80GB HBM3 GPUs" in html and re.search(r"0\s*/\s*8", html)
    assert "+4 NVIDIA H100 80GB HBM3 GPUs" in html and 'data-status="submitted"' in html
    assert "owner@example.com" in html
    assert "Not yet applied on the cluster" in html
    assert reverse(NEW, args=["acme"]) in html


def test_dashboard_requests_show_each_line_granted_in_the_order_asked(
    login, tenant_member, tenant, granted, submit
):
    """Each recent request's lines, read in its own row: what was granted where a platform
    admin granted less than asked, else what was asked."""
    request = submit({"gpu:nvidia-h100-80gb": 4, "cpu": 1500})
    request.lines.filter(resource="gpu:nvidia-h100-80gb").update(approved_amount=2)
    submit({"cpu": 8})
    html = login(tenant_member).get(reverse("tenants:dashboard", args=["acme"])).content.decode()
    assert '<div class="small">+2 NVIDIA H100 80GB HBM3 GPUs, +1,500 vCPU</div>' in html
    assert '<div class="small">+8 vCPU</div>' in html


def test_viewer_sees_quota_but_no_request_button(login, tenant_viewer, tenant, granted):
    html = login(tenant_viewer).get(reverse("tenants:quota-detail", args=["acme"])).content.decode()
    assert "NVIDIA H100 80GB HBM3 GPUs" in html
    assert 'id="request-quota"' not in html
    assert login(tenant_viewer).get(reverse(NEW, args=["acme"])).status_code == 403


def test_member_requests_quota_through_the_form(login, tenant_member, tenant, granted):
    client = login(tenant_member)
    assert client.get(reverse(NEW, args=["acme"])).status_code == 200
    ends_on = (timezone.localdate() + datetime.timedelta(days=30)).isoformat()
    response = client.post(
        reverse(NEW, args=["acme"]),
        _form([("gpu:nvidia-h100-80gb", 8), ("memory-gib", 256)], ends_on=ends_on),
    )
    request = QuotaRequest.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse(
        "tenants:quota-request-detail", args=["acme", request.pk]
    )
    assert request.ends_on.isoformat() == ends_on and request.requested_by == tenant_member
    assert sorted(request.lines.values_list("resource", "amount")) == [
        ("gpu:nvidia-h100-80gb", 8),
        ("memory-gib", 256),
    ]
    detail = client.get(response["Location"]).content.decode()
    assert "Waiting for a platform admin" in detail and 'id="withdraw"' in detail
    assert 'hx-trigger="every 5s"' in detail  # the status polls while the request is open


BAD_INPUT = [
    ([("gpu:nvidia-h100-80gb", 0)], "", "lines-0-amount", "at least 1"),
    ([("gpu:nvidia-h100-80gb", -3)], "", "lines-0-amount", "at least 1"),
    ([("gpu:nvidia-h100-80gb", 999999)], "", "lines-0-amount", "beyond any plausible"),
    ([("gpu:nvidia-b300", 4)], "", "lines-0-resource", "Unknown resource"),
    ([("mig:nvidia-a100-80gb:5g.50gb", 4)], "", "lines-0-resource", "Unknown resource"),
    ([("cpu", 8)], "2020-01-01", "ends_on", "in the future"),
    ([("cpu", 8), ("cpu", 4)], "", "lines-errors", "twice"),
    ([("", "")], "", "lines-errors", "at least one resource"),
]


@pytest.mark.parametrize(
    ("lines", "ends_on", "where", "message"),
    BAD_INPUT,
    ids=[
        "zero",
        "negative",
        "absurd",
        "unknown-model",
        "unknown-profile",
        "past-date",
        "duplicate",
        "empty",
    ],
)
def test_bad_input_shows_field_errors_and_stores_nothing(
    login, tenant_member, tenant, lines, ends_on, where, message
):
    response = login(tenant_member).post(reverse(NEW, args=["acme"]), _form(lines, ends_on=ends_on))
    assert response.status_code == 200
    html = response.content.decode()
    assert message in html
    if where.startswith("lines-0") or where == "ends_on":
        field = f'id="id_{where}"'
        assert re.search(field + r"[^>]*is-invalid|is-invalid[^>]*" + field, html), where
    else:
        assert f'id="{where}"' in html
    assert not QuotaRequest.objects.exists()


def test_dedicated_tenant_is_not_offered_mig_and_is_refused_it(login, tenant_member, tenant):
    tenant.isolation = "dedicated"
    tenant.save()
    client = login(tenant_member)
    assert (
        "mig:nvidia-a100-80gb:1g.10gb"
        not in client.get(reverse(NEW, args=["acme"])).content.decode()
    )
    html = client.post(
        reverse(NEW, args=["acme"]), _form([("mig:nvidia-a100-80gb:1g.10gb", 7)])
    ).content.decode()
    assert "trust domain" in html
    assert not QuotaRequest.objects.exists()


def test_the_htmx_preview_shows_the_resulting_quota_and_fleet_capacity(
    login, tenant_member, tenant, granted, fleet
):
    client = login(tenant_member)
    url = reverse("tenants:quota-request-preview", args=["acme"])
    html = client.post(
        url, _form([("gpu:nvidia-h100-80gb", 4)]), HTTP_HX_REQUEST="true"
    ).content.decode()
    assert html.lstrip().startswith('<div class="card" id="preview"')
    assert "<html" not in html
    row = re.search(r'data-resource="gpu:nvidia-h100-80gb".*?</tr>', html, re.S).group(0)
    assert re.findall(r">\s*(\+?\d+)\s*<", row)[:3] == ["8", "+4", "12"]
    assert "capacity available" in row
    assert "15 healthy on the shared pool (nodes reserved for nobody), 8 granted there" in row
    assert "3 left after" in row
    html = client.post(
        url, _form([("gpu:nvidia-h100-80gb", 10)]), HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "beyond free capacity" in html and "3 short" in html
    # Half-typed rows are left out rather than failing the preview.
    html = client.post(
        url, _form([("gpu:nvidia-b300", 1), ("storage-gib", "")]), HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "Pick a resource and an amount" in html


def test_adding_a_line_redraws_the_form_with_what_was_typed(login, tenant_member, tenant):
    response = login(tenant_member).post(
        reverse(NEW, args=["acme"]),
        _form([("cpu", 8)], justification="keep me", extra={"add_line": "1"}),
        HTTP_HX_REQUEST="true",
    )
    html = response.content.decode()
    assert html.lstrip().startswith("<form")
    assert 'name="lines-TOTAL_FORMS" value="2"' in html
    assert 'value="cpu" selected' in html and "keep me" in html
    assert "is-invalid" not in html
    assert not QuotaRequest.objects.exists()


def test_history_lists_the_tenants_requests_with_a_pinned_query_count(
    login, tenant_member, tenant, submit, django_assert_max_num_queries
):
    client = login(tenant_member)
    url = reverse("tenants:quota-request-list", args=["acme"])
    submit({"cpu": 1})
    client.get(url)
    with django_assert_max_num_queries(20) as few:
        assert client.get(url).status_code == 200
    for n in range(12):
        submit({"cpu": n + 1, "gpu:nvidia-l40s": 1})
    with django_assert_max_num_queries(len(few.captured_queries)):
        html = client.get(url).content.decode()
    assert len(re.findall(r'id="request-\d+"', html)) == 13


def test_withdrawing_from_the_detail_page(login, tenant_member, tenant, submit):
    request = submit()
    client = login(tenant_member)
    url = reverse("tenants:quota-request-withdraw", args=["acme", request.pk])
    assert client.post(url, {"confirm": f"quota request #{request.pk}"}).status_code == 302
    assert QuotaRequest.objects.get(pk=request.pk).status == S.WITHDRAWN
    client.post(url)  # twice: refused politely
    detail = client.get(reverse("tenants:quota-request-detail", args=["acme", request.pk]))
    status = re.search(r'<div[^>]*id="request-status"[^>]*>', detail.content.decode()).group(0)
    assert "Withdrawn" in detail.content.decode() and "hx-trigger" not in status


def test_detail_shows_decision_and_cluster_error(login, tenant_member, submit, platform_admin):
    request = submit()
    quota_requests.quota_request_reject(
        request_id=request.pk, approver=platform_admin, reason="No H100s left this quarter."
    )
    html = (
        login(tenant_member)
        .get(reverse("tenants:quota-request-detail", args=["acme", request.pk]))
        .content.decode()
    )
    assert "No H100s left this quarter." in html and 'data-status="rejected"' in html


def test_owner_manages_members_but_not_those_from_keycloak(
    login, tenant_owner, tenant_member, tenant
):
    UserFactory(username="newbie", email="newbie@example.com")
    synced = MembershipFactory(
        tenant=tenant, user=UserFactory(username="synced"), source=Source.KEYCLOAK
    )
    client = login(tenant_owner)
    url = reverse("tenants:member-list", args=["acme"])
    html = client.get(url).content.decode()
    assert "managed in Keycloak" in html

    assert client.post(url, {"user": "newbie", "role": "viewer"}).status_code == 302
    assert Membership.objects.get(user__username="newbie").role == "viewer"
    response = client.post(url, {"user": "nobody", "role": "member"})
    assert "No portal user" in response.content.decode()

    member = Membership.objects.get(user=tenant_member)
    client.post(reverse("tenants:member-change", args=["acme", member.pk]), {"role": "owner"})
    assert Membership.objects.get(pk=member.pk).role == "owner"
    client.post(reverse("tenants:member-change", args=["acme", synced.pk]), {"remove": "1"})
    assert Membership.objects.filter(pk=synced.pk).exists()  # Keycloak's, not ours to remove
    client.post(reverse("tenants:member-change", args=["acme", member.pk]),
                {"remove": "1", "confirm": "member"})
    assert not Membership.objects.filter(pk=member.pk).exists()
    assert AuditEvent.objects.filter(action="membership.remove").count() == 1


def test_last_owner_cannot_demote_themselves(login, tenant_owner, tenant):
    own = Membership.objects.get(user=tenant_owner)
    response = login(tenant_owner).post(
        reverse("tenants:member-change", args=["acme", own.pk]), {"role": "member"}, follow=True
    )
    assert "keeps at least one owner" in response.content.decode()
    assert Membership.objects.get(pk=own.pk).role == "owner"


def test_members_cannot_manage_members(login, tenant_member, tenant_owner, tenant):
    client = login(tenant_member)
    url = reverse("tenants:member-list", args=["acme"])
    assert "Add a member" not in client.get(url).content.decode()
    assert client.post(url, {"user": "owner", "role": "viewer"}).status_code == 403
    owner = Membership.objects.get(user=tenant_owner)
    change = reverse("tenants:member-change", args=["acme", owner.pk])
    assert client.post(change, {"remove": "1"}).status_code == 403
    assert Membership.objects.get(pk=owner.pk).role == "owner"


def test_admin_request_queue_lists_waiting_requests(login, platform_admin, submit, tenant_member):
    submit({"gpu:nvidia-h100-80gb": 4})
    html = login(platform_admin).get(reverse("tenants:requests")).content.decode()
    assert "Acme Labs" in html and "+4 NVIDIA H100 80GB HBM3 GPUs" in html
    assert reverse("admin:tenants_quotarequest_changelist") in html


def test_quota_page_shows_temporary_grants(login, tenant_member, tenant, submit, platform_admin):
    QuotaFactory(tenant=tenant, resource="cpu", limit=10)
    ends_on = timezone.localdate() + datetime.timedelta(days=9)
    request = submit({"cpu": 6}, ends_on=ends_on)
    quota_requests.quota_request_approve(request_id=request.pk, approver=platform_admin)
    QuotaRequest.objects.filter(pk=request.pk).update(status=S.APPLIED)
    html = login(tenant_member).get(reverse("tenants:quota-detail", args=["acme"])).content.decode()
    assert f"+6 until {ends_on:%Y-%m-%d}" in html


def test_members_page_query_count_does_not_grow(
    login, tenant_owner, tenant, django_assert_max_num_queries
):
    client = login(tenant_owner)
    url = reverse("tenants:member-list", args=["acme"])
    client.get(url)
    with django_assert_max_num_queries(15) as few:
        client.get(url)
    MembershipFactory.create_batch(10, tenant=tenant)
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert client.get(url).status_code == 200


def test_cluster_status_polls_while_applying_and_stops_once_applied(
    login, tenant_member, tenant, granted, other_tenant, simulated_gateway
):
    from tenants.enforcement.services import tenant_reconcile

    client = login(tenant_member)
    url = reverse("tenants:cluster-status", args=["acme"])
    dashboard = client.get(reverse("tenants:dashboard", args=["acme"])).content.decode()
    status = re.search(r'<div[^>]*id="cluster-status"[^>]*>', dashboard).group(0)
    assert f'hx-get="{url}"' in status and 'hx-trigger="every 5s"' in status

    partial = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<div class="small mt-1" id="cluster-status"')
    assert "Not yet applied on the cluster" in partial and "hx-trigger" in partial

    tenant_reconcile(tenant_id=tenant.pk)
    partial = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "Applied on the cluster at" in partial and "hx-trigger" not in partial
    assert 'data-in-sync="true"' in partial
    # Another tenant's status is not there.
    assert client.get(reverse("tenants:cluster-status", args=["globex"])).status_code == 404


def test_request_status_polls_through_applying_and_failing_until_applied(
    login,
    tenant_member,
    tenant,
    granted,
    submit,
    platform_admin,
    kube_gateway,
    kube_emulator,
    django_capture_on_commit_callbacks,
):
    from core.fleet import TransientFleetError
    from tenants.enforcement.services import tenant_reconcile, tenants_reconcile_sweep

    request = submit({"gpu:nvidia-h100-80gb": 4})
    quota_requests.quota_request_approve(request_id=request.pk, approver=platform_admin)
    client = login(tenant_member)
    url = reverse("tenants:quota-request-detail", args=["acme", request.pk])

    def poll() -> str:
        html = client.get(url, HTTP_HX_REQUEST="true").content.decode()
        assert html.lstrip().startswith('<div class="card" id="request-status"'), html[:200]
        return html

    applying = poll()
    assert 'data-status="approved"' in applying and "Being applied on the cluster" in applying
    assert 'hx-trigger="every 5s"' in applying

    path = "/api/v1/namespaces/tenant-acme/resourcequotas/tenant-quota"
    kube_emulator.fail(503, method="PATCH", path=path, message="etcdserver: leader changed")
    with pytest.raises(TransientFleetError):
        tenant_reconcile(tenant_id=tenant.pk)
    failing = poll()
    assert 'data-status="failed"' in failing and "etcdserver: leader changed" in failing
    assert 'hx-trigger="every 5s"' in failing  # still retrying: keep watching

    with django_capture_on_commit_callbacks(execute=True):
        tenants_reconcile_sweep()
    applied = poll()
    assert 'data-status="applied"' in applied and "Applied on the cluster at" in applied
    assert "hx-trigger" not in applied and "etcdserver" not in applied


def test_cohort_limits_show_for_gpus_only(login, tenant_member, tenant):
    tenant.cohort = "pool"
    tenant.save()
    QuotaFactory(tenant=tenant, resource="gpu:nvidia-l40s", limit=8, borrowing_limit=2)
    QuotaFactory(tenant=tenant, resource="cpu", limit=64)
    html = login(tenant_member).get(reverse("tenants:quota-detail", args=["acme"])).content.decode()
    gpu = re.search(r'data-resource="gpu:nvidia-l40s".*?</tr>', html, re.S).group(0)
    cpu = re.search(r'data-resource="cpu".*?</tr>', html, re.S).group(0)
    assert "2 / all" in gpu
    assert "∞" not in cpu and "Cohorts share GPUs only" in cpu
