"""The inventory API: admins see and move everything; tenants see capacity summaries only."""

import pytest

from core.models import AuditEvent
from inventory.models import HealthEvent, Node, NodeState
from tests.factories import NodeFactory, QuotaFactory, hami_gpu_node

from .fleets import build_fleet

ADMIN_ONLY = ["/api/v1/nodes/", "/api/v1/sites/", "/api/v1/racks/", "/api/v1/gpus/",
              "/api/v1/health-events/", "/api/v1/fleet/summary/", "/api/v1/inventory/export/"]


@pytest.mark.django_db
@pytest.mark.parametrize("path", ADMIN_ONLY)
def test_tenants_get_403_from_hardware_endpoints(api_client, tenant_member, path):
    api_client.force_login(tenant_member)
    response = api_client.get(path)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"


@pytest.mark.django_db
def test_a_tenant_cannot_read_or_move_a_node(api_client, tenant_owner):
    node = NodeFactory(state=NodeState.AVAILABLE)
    api_client.force_login(tenant_owner)

    assert api_client.get(f"/api/v1/nodes/{node.pk}/").status_code == 403
    assert api_client.post(f"/api/v1/nodes/{node.pk}/cordon/", {"reason": "x"}).status_code == 403
    node.refresh_from_db()
    assert node.state == NodeState.AVAILABLE
    assert not AuditEvent.objects.filter(action="node.transition").exists()


@pytest.mark.django_db
def test_capacity_is_served_to_tenants_with_grants_and_not_to_users_without_a_role(
    api_client, tenant_member, tenant, no_role_user
):
    build_fleet(9)
    QuotaFactory(tenant=tenant, resource="gpu:nvidia-h100-80gb", limit=5)

    api_client.force_login(tenant_member)
    rows = {row["resource"]: row for row in api_client.get("/api/v1/capacity/").json()}
    api_client.force_login(no_role_user)
    refused = api_client.get("/api/v1/capacity/")

    # 9 nodes: 3 per model; states cycle, so nodes 0-5 available, 6 cordoned, 7 maintenance.
    assert rows["gpu:nvidia-h100-80gb"] == {
        "resource": "gpu:nvidia-h100-80gb", "label": "NVIDIA H100 80GB HBM3 GPUs",
        "installed": 24, "healthy": 15, "reserved": 8, "granted": 5, "in_use": 0,
        "cluster_in_use": 0,
    }
    assert refused.status_code == 403


@pytest.mark.django_db
def test_node_detail_carries_gpus_nics_events_and_allowed_moves(api_client, platform_admin):
    node = build_fleet(1)[0]
    api_client.force_login(platform_admin)

    body = api_client.get(f"/api/v1/nodes/{node.pk}/").json()

    assert body["hostname"] == "gpu-00000" and body["site"] == "bulk1"
    assert [g["index"] for g in body["gpus"]] == list(range(8))
    assert [n["name"] for n in body["nics"]] == ["mlx5_0", "mlx5_1"]
    assert body["health"] == "critical" and body["open_events"] == 1
    assert body["allowed_moves"] == ["cordoned"]


@pytest.mark.django_db
def test_the_api_says_how_nodes_share_their_gpus(api_client, platform_admin):
    build_fleet(3)
    shared = hami_gpu_node(gpus=2, hami_in_use={"vgpus": 1, "memory_mib": 4096, "cores": 30})
    api_client.force_login(platform_admin)

    summary = api_client.get("/api/v1/fleet/summary/").json()
    listed = api_client.get("/api/v1/nodes/?sharing=hami").json()
    detail = api_client.get(f"/api/v1/nodes/{shared.pk}/").json()

    assert summary["gpu_sharing"]["nvidia-l40s"] == {"whole": 8, "mig": 0, "hami": 2,
                                                     "hami_reserved": 0}
    assert summary["gpu_sharing"]["nvidia-h100-80gb"]["whole"] == 8
    assert [n["hostname"] for n in listed["results"]] == [shared.hostname]
    assert listed["results"][0]["gpu_sharing"] == "hami"
    assert detail["hami_in_use"] == {"vgpus": 1, "memory_mib": 4096, "cores": 30}
    assert [d["memory_mib"] for d in detail["hami_devices"]] == [46068, 46068]


@pytest.mark.django_db
def test_admin_cordons_and_drains_through_the_api_and_illegal_moves_get_409(
    api_client, platform_admin, django_capture_on_commit_callbacks
):
    node = NodeFactory(state=NodeState.AVAILABLE)
    api_client.force_login(platform_admin)

    with django_capture_on_commit_callbacks(execute=True):
        cordoned = api_client.post(f"/api/v1/nodes/{node.pk}/cordon/", {"reason": "fan"})
        drained = api_client.post(f"/api/v1/nodes/{node.pk}/drain/", {"reason": "XID 79"})
    refused = api_client.post(f"/api/v1/nodes/{node.pk}/transition/",
                              {"target": "retired", "reason": "early"})
    no_reason = api_client.post(f"/api/v1/nodes/{node.pk}/return-to-service/", {})

    assert cordoned.status_code == 200 and cordoned.json()["state"] == "cordoned"
    assert drained.status_code == 200
    assert Node.objects.get(pk=node.pk).state == NodeState.MAINTENANCE  # nothing to evict
    assert refused.status_code == 409
    assert refused.json()["error"]["message"].endswith(
        "cannot go from maintenance to retired: record disks wiped and BMC reset first."
    )
    assert no_reason.status_code == 400
    assert "reason" in no_reason.json()["error"]["fields"]


@pytest.mark.django_db
def test_validation_results_and_open_health_events_through_the_api(api_client, platform_admin):
    node = NodeFactory(state=NodeState.VALIDATING)
    HealthEvent.objects.create(node=node, kind="nvlink-errors", subject="gpu:2",
                               severity="warning")
    api_client.force_login(platform_admin)

    recorded = api_client.post(f"/api/v1/nodes/{node.pk}/validations/",
                               {"kind": "nccl", "passed": True, "summary": "busbw 385 GB/s",
                                "metrics": {"busbw_gbps": 385}}, format="json")
    events = api_client.get("/api/v1/health-events/?resolved_at__isnull=true").json()
    resolved = api_client.post(f"/api/v1/health-events/{events['results'][0]['id']}/resolve/",
                               {"reason": "cable reseated"})

    assert recorded.status_code == 201 and recorded.json()["metrics"] == {"busbw_gbps": 385}
    assert events["count"] == 1 and events["results"][0]["node"] == node.hostname
    assert resolved.json()["resolution"] == "cable reseated"


@pytest.mark.django_db
def test_export_api_serves_csv_and_json(api_client, platform_admin):
    build_fleet(2)
    api_client.force_login(platform_admin)

    csv_body = api_client.get("/api/v1/inventory/export/?as=csv&objects=nics").content
    document = api_client.get("/api/v1/inventory/export/?as=json").json()

    assert csv_body.decode().splitlines()[0] == (
        "device,name,type,mac_address,ib_guid,speed_gbps,fabric,numa_node,rail"
    )
    assert len(csv_body.decode().splitlines()) == 1 + 4
    assert [n["name"] for n in document["nodes"]] == ["gpu-00000", "gpu-00001"]
    assert len(document["nodes"][0]["gpus"]) == 8
