"""Migration 0024: existing quota becomes fleet-wide, and what the one cluster held of each
tenant becomes its row on the default cluster (so the next reconcile compares with it)."""

import pytest

from tenants.models import Quota, Tenant, TenantCluster
from tenants.quota.limits import grants_by_cluster
from tests.support.migrations import migrate_to, migrate_to_latest

BEFORE = [("tenants", "0023_workload_cluster")]


@pytest.mark.django_db(transaction=True)
def test_existing_quota_becomes_fleet_wide_and_the_applied_state_stays_on_main():
    apps = migrate_to(BEFORE)
    try:
        Tenant0023 = apps.get_model("tenants", "Tenant")
        Quota0023 = apps.get_model("tenants", "Quota")
        applied = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tenant-acme"}}]
        acme = Tenant0023.objects.create(slug="acme", name="Acme Labs", desired_version=3,
                                         applied_version=3, applied_manifests=applied)
        never = Tenant0023.objects.create(slug="globex", name="Globex")
        Quota0023.objects.create(tenant=acme, resource="gpu:nvidia-h100-80gb", limit=8)
        Quota0023.objects.create(tenant=acme, resource="cpu", limit=64)
    finally:
        migrate_to_latest()

    assert set(Quota.objects.values_list("cluster_id", flat=True)) == {None}
    assert grants_by_cluster(acme.pk) == {None: {"gpu:nvidia-h100-80gb": 8, "cpu": 64}}
    row = TenantCluster.objects.get(tenant_id=acme.pk)
    assert (row.cluster_id, row.applied_version, row.applied_manifests) == ("main", 3, applied)
    assert not TenantCluster.objects.filter(tenant_id=never.pk).exists()
    assert Tenant.objects.get(pk=acme.pk).in_sync
