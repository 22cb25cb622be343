"""Every decision leaves an audit event with actor, object, tenant, changes and request id."""

import pytest

from core.models import AuditEvent
from tenants.access import services
from tenants.quota import services as quota_services


@pytest.mark.django_db
def test_decisions_are_audited_with_the_request_id(api_client, tenant_owner, tenant):
    api_client.force_login(tenant_owner)
    response = api_client.post(
        "/api/v1/tokens/", {"name": "ci"}, format="json", HTTP_X_REQUEST_ID="req-123"
    )
    assert response["X-Request-ID"] == "req-123"
    event = AuditEvent.objects.get(action="api_token.create")
    assert event.actor == tenant_owner
    assert event.actor_repr == "owner"
    assert event.request_id == "req-123"
    assert event.changes["name"] == "ci"


@pytest.mark.django_db
def test_service_audit_names_tenant_and_change(platform_admin, tenant, tenant_member):
    services.membership_set(actor=platform_admin, tenant=tenant, user=tenant_member, role="owner")
    event = AuditEvent.objects.get(action="membership.set")
    assert event.tenant_slug == "acme"
    assert event.object_type == "tenants.membership"
    assert event.changes["role"] == ["member", "owner"]


@pytest.mark.django_db
def test_audit_trail_is_listed_and_filterable_in_admin_but_read_only(
    client, platform_admin, tenant
):
    quota_services.quota_set(actor=platform_admin, tenant=tenant, resource="cpu", limit=64)
    services.tenant_create(actor=platform_admin, slug="initech", name="Initech")
    client.force_login(platform_admin)
    listing = client.get("/admin/portal/auditevent/?action=quota.set")
    assert listing.status_code == 200
    assert listing.context["cl"].result_count == 1
    event = AuditEvent.objects.get(action="quota.set")
    detail = client.post(f"/admin/portal/auditevent/{event.pk}/change/", {"action": "x"})
    assert detail.status_code == 403
    assert AuditEvent.objects.get(pk=event.pk).action == "quota.set"
