"""A quota request from ask to enforcement, in headless Chromium: the member asks in the portal
(htmx preview), the platform admin decides in Django admin, the cluster (the Kubernetes API
emulator) gets the new quota, and the member sees it applied. Screenshots land in
artifacts/screenshots/ for a human to look at."""

import re

import pytest
from django.core import mail

from tenants.models import Quota, QuotaRequest
from tests.factories import TEST_PASSWORD, GPUFactory, NodeFactory, QuotaFactory
from tests.support.fixtures_browser import screenshot, sign_in, sign_out

X = "\N{MULTIPLICATION SIGN}"
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def acme(tenant, tenant_owner, tenant_member, platform_admin):
    QuotaFactory(tenant=tenant, resource="gpu:nvidia-h100-80gb", limit=8)
    for name in ("h100-a", "h100-b"):
        node = NodeFactory(hostname=name)
        for i in range(8):
            GPUFactory(node=node, index=i, model="nvidia-h100-80gb")
    return tenant


def test_member_asks_admin_approves_with_changed_amount_and_the_cluster_enforces_it(
    acme, page, live_server, kube_gateway, kube_emulator, mailoutbox
):
    # The member asks for 4 more H100s and sees what it would do before sending.
    sign_in(page, "member", TEST_PASSWORD)
    page.goto("/t/acme/quota/requests/new/")
    page.select_option("#id_lines-0-resource", "gpu:nvidia-h100-80gb")
    page.fill("#id_lines-0-amount", "4")
    row = page.locator('#preview tr[data-resource="gpu:nvidia-h100-80gb"]')
    row.wait_for()
    assert "12" in row.inner_text() and "capacity available" in row.inner_text()
    page.fill("#id_justification", "A second vLLM replica for the launch.")
    screenshot(page, "quota-request-form")
    with page.expect_navigation():
        page.click("#submit-request")
    assert page.locator('#request-status [data-status="submitted"]').is_visible()
    request = QuotaRequest.objects.get()
    sign_out(page)

    # The platform admin reviews it in Django admin and grants 2 instead of 4.
    sign_in(page, "platform-admin", TEST_PASSWORD)
    page.goto("/requests/")
    with page.expect_navigation():
        page.click(f'a[href="/admin/tenants/quotarequest/{request.pk}/change/"]')
    lines = page.locator("#review-lines")
    assert f"0.50{X} → 0.75{X}" in lines.inner_text()  # 8 granted of 16 healthy, then 12
    page.fill(f"#id_amount_{request.lines.get().pk}", "2")
    page.click("#recalculate")
    page.locator("#review-lines", has_text=f"0.50{X} → 0.62{X}").wait_for()
    page.fill("#id_note", "Two now; more after the H200 expansion.")
    screenshot(page, "quota-request-admin-review")
    with page.expect_navigation():
        page.click("#approve-changed")
    assert "Approved quota request" in page.locator(".messagelist").inner_text()
    screenshot(page, "quota-request-admin-queue")

    request.refresh_from_db()
    assert request.status == QuotaRequest.Status.APPLIED
    assert Quota.objects.get(resource="gpu:nvidia-h100-80gb").limit == 10
    cluster_quota = kube_emulator.get_object("v1", "ResourceQuota", "tenant-quota", "tenant-acme")
    assert cluster_quota["spec"]["hard"]["requests.nvidia.com/gpu"] == "10"
    decision = next(m for m in mail.outbox if "approved" in m.subject)
    assert set(decision.to) == {"owner@example.com", "member@example.com"}
    page.context.clear_cookies()  # Django admin has no portal user menu to sign out from

    # The member sees the decision and the quota applied on the cluster.
    sign_in(page, "member", TEST_PASSWORD)
    page.goto(f"/t/acme/quota/requests/{request.pk}/")
    assert page.locator('#request-status [data-status="applied"]').is_visible()
    assert "Two now" in page.locator("#decision-note").inner_text()
    page.goto("/t/acme/")
    assert re.search(r"0\s*/\s*10", page.locator("#section-quota").inner_text())
    assert "Applied on the cluster at" in page.locator("#cluster-status").inner_text()
    screenshot(page, "quota-tenant-dashboard")


def test_admin_rejects_several_requests_at_once_with_a_reason(
    acme, tenant_member, submit, page, live_server
):
    first, second = submit({"cpu": 8}), submit({"memory-gib": 64})
    sign_in(page, "platform-admin", TEST_PASSWORD)
    page.goto("/admin/tenants/quotarequest/?status__exact=submitted")
    for request in (first, second):
        page.check(f'input[name="_selected_action"][value="{request.pk}"]')
    page.select_option('select[name="action"]', "reject_selected")
    with page.expect_navigation():
        page.click('button[name="index"]')
    page.fill("#id_reason", "CPU-only work belongs on the shared CPU pool.")
    screenshot(page, "quota-request-bulk-reject")
    with page.expect_navigation():
        page.click("#confirm-reject")
    assert "Rejected 2 request(s)" in page.locator(".messagelist").inner_text()
    statuses = set(QuotaRequest.objects.values_list("status", flat=True))
    assert statuses == {QuotaRequest.Status.REJECTED}


def test_bulk_approval_shows_each_pool_s_impact_and_the_decided_review_shows_the_decision(
    acme, tenant_member, submit, page, live_server
):
    from tenants.models import Membership, Tenant
    from tests.factories import MembershipFactory, TenantFactory, UserFactory

    helix = TenantFactory(slug="helix", name="Helix", isolation=Tenant.Isolation.DEDICATED)
    QuotaFactory(tenant=helix, resource="gpu:nvidia-h200", limit=32)
    for name in ("h200-a", "h200-b", "h200-c", "h200-d"):
        node = NodeFactory(hostname=name, reserved_for="helix")
        for i in range(8):
            GPUFactory(node=node, index=i, model="nvidia-h200")
    helix_dev = UserFactory(username="helix-dev")
    MembershipFactory(tenant=helix, user=helix_dev, role=Membership.Role.MEMBER)
    ask = submit({"gpu:nvidia-h200": 24}, by=helix_dev, target=helix)
    more = submit({"gpu:nvidia-h100-80gb": 4})

    sign_in(page, "platform-admin", TEST_PASSWORD)
    page.goto("/admin/tenants/quotarequest/?status__exact=submitted")
    for request in (ask, more):
        page.check(f'input[name="_selected_action"][value="{request.pk}"]')
    page.select_option('select[name="action"]', "approve_selected")
    with page.expect_navigation():
        page.click('button[name="index"]')
    table = page.locator("table.impact-table")
    assert table.is_visible()
    helix_row = table.locator(f'tr[data-request="{ask.pk}"]').inner_text()
    assert "nodes reserved for helix" in helix_row and f"1.00{X} → 1.75{X}" in helix_row
    assert "more than the 32 healthy" in helix_row
    acme_row = table.locator(f'tr[data-request="{more.pk}"]').inner_text()
    assert "the shared pool" in acme_row and f"0.50{X} → 0.75{X}" in acme_row
    screenshot(page, "quota-request-bulk-approve-impact")
    with page.expect_navigation():
        page.click("#confirm-approve")
    assert "Approved 2 request(s)" in page.locator(".messagelist").inner_text()

    page.goto(f"/admin/tenants/quotarequest/{ask.pk}/change/")
    assert page.locator("#review-lines").count() == 0
    decision = page.locator("#decision").inner_text()
    assert decision.startswith("Approved") and "platform-admin" in decision
    effect = page.locator('#decision-effect tr[data-resource="gpu:nvidia-h200"]').inner_text()
    assert re.search(r"\+24\s+\+24\s+32\s+56", effect)
    screenshot(page, "quota-request-decided-review")

    # Helix's own quota page says how much of the 56 its 32 reserved GPUs can run.
    page.context.clear_cookies()
    sign_in(page, "helix-dev", TEST_PASSWORD)
    page.goto("/t/helix/quota/")
    schedulable = page.locator("#schedulable").inner_text()
    assert "At most 32 of your 56" in schedulable
    screenshot(page, "quota-tenant-schedulable")
