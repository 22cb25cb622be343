"""Bad input through the pages and the API: refused with a message, never a 500 or a half-write."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from core.models import AuditEvent
from inventory.models import GPU, NIC, HealthEvent, Node, NodeState, NodeValidation, Rack
from tests.factories import NodeFactory, SiteFactory

LONG = "x" * 300


def _counts() -> tuple[int, int, int, int]:
    return Node.objects.count(), GPU.objects.count(), NIC.objects.count(), Rack.objects.count()


@pytest.fixture
def inventory(db):
    SiteFactory(slug="fra1")
    return NodeFactory(hostname="gpu-a", k8s_name="gpu-a")


# (objects, CSV, the error the bad row gets)
BAD_ROWS = {
    "name too long": ("nodes", f"name\n{'a' * 254}\n", "name: 'aaaa"),
    "name not a host name": ("nodes", "name\nrack 1/<b>node</b>\n", "is not a host name"),
    "name in unicode": ("nodes", "name\nnöde-☃\n", "is not a host name"),
    "capitalised Kubernetes name": ("nodes", "name,k8s_name\ngpu-b,GPU-B\n",
                                    "is not a Kubernetes node name"),
    "duplicate Kubernetes name": ("nodes", "name,k8s_name\ngpu-b,gpu-a\n",
                                  "duplicate Kubernetes node name gpu-a: already gpu-a's"),
    "serial too long": ("nodes", f"name,serial\ngpu-b,{LONG}\n",
                        "serial: Ensure this value has at most 100 characters (it has 300)."),
    "huge CPU count": ("nodes", "name,cpu_cores\ngpu-b,99999999999\n",
                       "cpu_cores: Ensure this value is less than or equal to 2147483647."),
    "rack name too long": ("nodes", f"name,site,rack,position\ngpu-b,fra1,{'r' * 51},1\n",
                           "rack: Ensure this value has at most 50 characters (it has 51)."),
    "huge GPU index": ("gpus", "device,index,model\ngpu-a,40000,nvidia-h100-80gb\n",
                       "index: Ensure this value is less than or equal to 32767."),
    "PCI bus id too long": ("gpus", f"device,index,model,pci_bus_id\ngpu-a,0,nvidia-l40s,{LONG}\n",
                            "pci_bus_id: Ensure this value has at most 32 characters"),
    "huge NUMA node": ("gpus", "device,index,model,numa_node\ngpu-a,0,nvidia-l40s,70000\n",
                       "numa_node: Ensure this value is less than or equal to 32767."),
    "NIC name too long": ("nics", f"device,name\ngpu-a,{LONG}\n",
                          "name: Ensure this value has at most 50 characters"),
    "huge link speed": ("nics", "device,name,speed_gbps\ngpu-a,eth0,99999999999\n",
                        "speed_gbps: Ensure this value is less than or equal to 2147483647."),
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", list(BAD_ROWS))
def test_values_the_database_would_refuse_are_row_errors_on_the_import_page(
    login, platform_admin, inventory, case
):
    objects, text, message = BAD_ROWS[case]
    good = {"nodes": "gpu-good\n", "gpus": "gpu-a,7,nvidia-l40s\n", "nics": "gpu-a,eth9\n"}
    text += good[objects] if objects != "nodes" or text.count(",") == 0 else ""
    before = _counts()

    response = login(platform_admin).post(
        "/fleet/import/", {"format": "csv", "objects": objects, "data": text}
    )

    assert response.status_code == 200
    result = response.context["result"]
    assert not result.applied
    errors = [e for row in result.rows for e in row.errors]
    assert any(message in e for e in errors), errors
    assert len(result.error_rows) == 1  # the good row is fine, and still not imported
    assert _counts() == before
    assert "Nothing was imported" in response.content.decode()


@pytest.mark.django_db
def test_an_uploaded_file_with_nul_bytes_or_no_rows_is_refused_as_a_whole(
    login, platform_admin, inventory
):
    client = login(platform_admin)
    for content, message in ((b"name\ngpu-\x00b\n", "NUL characters"),
                             (b"name\n", "holds no rows"),
                             (b"\xff\xfe not utf-8", "not UTF-8")):
        upload = SimpleUploadedFile("nodes.csv", content, content_type="text/csv")
        response = client.post("/fleet/import/", {"format": "csv", "objects": "nodes",
                                                  "file": upload})
        assert response.status_code == 200
        assert message in response.content.decode()
    assert Node.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"nodes": [{"name": "gpu-j", "gpus": 8}]}, "gpus: expected a list of objects"),
        ({"nodes": [{"name": "gpu-j", "nics": [1, 2]}]}, "nics: expected a list of objects"),
        ({"nodes": [{"name": {"first": "gpu-j"}}]}, "name: expected a single value, not dict"),
        ({"nodes": [{"name": "gpu-j", "serial": ["a", "b"]}]},
         "serial: expected a single value, not list"),
        ({"nodes": [{"name": "gpu-j", "gpus": [{"index": 0, "model": "nvidia-l40s",
                                                 "numa_node": 1.5}]}]},
         "numa_node: '1.5' is not a whole number"),
    ],
    ids=["gpus-number", "nics-not-objects", "name-object", "serial-list", "numa-float"],
)
def test_malformed_json_records_get_row_errors_from_the_api(
    api_client, platform_admin, document, message
):
    api_client.force_login(platform_admin)

    response = api_client.post("/api/v1/inventory/import/",
                               {"format": "json", "data": json.dumps(document),
                                "dry_run": False}, format="json")

    assert response.status_code == 400
    errors = [e for row in response.json()["rows"] for e in row["errors"]]
    assert any(message in e for e in errors), errors
    assert _counts() == (0, 0, 0, 0)


@pytest.mark.django_db
def test_json_nested_too_deeply_is_refused_as_a_whole(api_client, platform_admin):
    api_client.force_login(platform_admin)

    response = api_client.post("/api/v1/inventory/import/",
                               {"format": "json", "data": "[" * 50_000 + "]" * 50_000,
                                "dry_run": False}, format="json")

    assert response.status_code == 400
    assert response.json()["errors"] == ["Not an inventory: the JSON is nested too deeply."]


JUNK_QUERIES = [
    "/fleet/nodes/?q=%00", "/fleet/nodes/?reserved_for=%00", "/fleet/nodes/?rack=abc",
    "/fleet/nodes/?page=-1", "/fleet/nodes/?page=99999999999999999999", "/fleet/nodes/?state=x",
    "/fleet/nodes/?site=%E2%98%83", "/fleet/nodes/?q=" + "x" * 5000,
    "/fleet/nodes/99999999999999999999/", "/fleet/racks/99999999999999999999/",
    "/fleet/export/?format=xml&objects=%00",
    "/api/v1/nodes/?q=%00", "/api/v1/nodes/?rack=abc", "/api/v1/nodes/?page_size=-1",
    "/api/v1/nodes/?page=99999", "/api/v1/nodes/99999999999999999999/",
    "/api/v1/gpus/?node=abc", "/api/v1/gpus/?model=%00", "/api/v1/racks/?site=abc",
    "/api/v1/health-events/?resolved_at__isnull=maybe",
    "/api/v1/inventory/export/?as=csv&objects=racks",
]


@pytest.mark.django_db
@pytest.mark.parametrize("path", JUNK_QUERIES)
def test_junk_in_filters_and_ids_never_gives_a_500(login, platform_admin, path):
    NodeFactory()
    response = login(platform_admin).get(path)
    assert response.status_code in (200, 400, 404)


@pytest.mark.django_db
def test_validation_metrics_with_a_nul_character_are_refused(api_client, platform_admin):
    node = NodeFactory(state=NodeState.VALIDATING)
    api_client.force_login(platform_admin)

    for metrics in ({"note": "bad\u0000"}, {"huge": "x" * 20_000}):
        response = api_client.post(f"/api/v1/nodes/{node.pk}/validations/",
                                   {"kind": "nccl", "passed": True, "metrics": metrics},
                                   format="json")
        assert response.status_code == 400
        assert "metrics" in response.json()["error"]["fields"]
    assert not NodeValidation.objects.exists()


@pytest.mark.django_db
def test_a_resolve_note_with_a_nul_character_resolves_nothing(login, platform_admin):
    event = HealthEvent.objects.create(node=NodeFactory(), kind="xid", subject="gpu:0",
                                       severity="critical")

    response = login(platform_admin).post(f"/fleet/events/{event.pk}/resolve/",
                                          {"note": "fixed\x00"}, follow=True)

    assert response.status_code == 200
    assert "The note cannot be saved" in response.content.decode()
    event.refresh_from_db()
    assert event.resolved_at is None


@pytest.mark.django_db
def test_people_who_are_not_platform_admins_cannot_import_or_act(
    login, api_client, tenant_owner, finance, inventory
):
    csv = "name\ngpu-new\n"
    for user in (tenant_owner, finance):
        assert login(user).post("/fleet/import/", {"format": "csv", "objects": "nodes",
                                                   "data": csv}).status_code == 403
        api_client.force_login(user)
        assert api_client.post("/api/v1/inventory/import/",
                               {"format": "csv", "data": csv, "dry_run": False},
                               format="json").status_code == 403
        assert api_client.post(f"/api/v1/nodes/{inventory.pk}/drain/",
                               {"reason": "mine"}).status_code == 403
        assert login(user).post("/fleet/sync/").status_code == 403
    assert list(Node.objects.values_list("hostname", "state")) == [("gpu-a", "available")]
    assert not AuditEvent.objects.filter(action__startswith="node.").exists()
