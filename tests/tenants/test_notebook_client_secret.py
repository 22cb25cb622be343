"""The notebooks' sign-in client secret reaches every tenant namespace through the tenant
reconcile, and nowhere else: not in what the portal keeps of the apply, its audit events, its
logs, nor a refusal's message."""

import base64
import logging

import pytest

from core.fleet import TransientFleetError
from core.models import AuditEvent
from tenants.enforcement.services import tenant_reconcile, tenant_spec
from tenants.models import Tenant, TenantCluster

pytestmark = pytest.mark.django_db

NS = "tenant-acme"
SECRET = "nb-Q7rT2wY9zB4cD8fG1hJ5kL3mP6sV0x"
SECRET_PATH = f"/api/v1/namespaces/{NS}/secrets/portal-notebook-oidc"


def _everything_kept(tenant: Tenant) -> str:
    tenant.refresh_from_db()
    events = list(AuditEvent.objects.values_list("changes", flat=True))
    clusters = list(TenantCluster.objects.values_list("applied_manifests", "reconcile_error"))
    return repr((tenant.applied_manifests, tenant.reconcile_error, events, clusters,
                 tenant_spec(tenant=tenant)))


def test_the_reconcile_puts_the_client_secret_in_the_namespace_and_keeps_it_nowhere(
    tenant, kube_gateway, kube_emulator, settings, caplog
):
    settings.NOTEBOOK_OIDC_CLIENT_SECRET = SECRET
    with caplog.at_level(logging.DEBUG):
        tenant_reconcile(tenant_id=tenant.pk)

    stored = kube_emulator.get_object("v1", "Secret", "portal-notebook-oidc", NS)
    assert base64.b64decode(stored["data"]["client-secret"]).decode() == SECRET
    assert stored["metadata"]["labels"]["portal.ai-factory.io/tenant"] == "acme"
    assert "stringData" not in stored
    kept = _everything_kept(tenant)
    assert SECRET not in kept and base64.b64encode(SECRET.encode()).decode() not in kept
    assert SECRET not in caplog.text


def test_without_the_setting_no_secret_is_applied(tenant, kube_gateway, kube_emulator, settings):
    settings.NOTEBOOK_OIDC_CLIENT_SECRET = ""
    tenant_reconcile(tenant_id=tenant.pk)
    assert kube_emulator.get_object("v1", "Secret", "portal-notebook-oidc", NS) is None
    assert not kube_emulator.requests(path=SECRET_PATH)


def test_a_refused_secret_fails_the_reconcile_without_its_value(
    tenant, kube_gateway, kube_emulator, settings, caplog
):
    settings.NOTEBOOK_OIDC_CLIENT_SECRET = SECRET
    kube_emulator.fail(503, method="PATCH", path=SECRET_PATH,
                       message=f"admission webhook refused data {SECRET}")
    with caplog.at_level(logging.DEBUG), pytest.raises(TransientFleetError) as refused:
        tenant_reconcile(tenant_id=tenant.pk)

    assert SECRET not in str(refused.value) and "admission webhook refused" in str(refused.value)
    tenant.refresh_from_db()
    assert "admission webhook refused" in tenant.reconcile_error
    assert SECRET not in _everything_kept(tenant) and SECRET not in caplog.text
