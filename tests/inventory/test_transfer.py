"""Import and export: dry-run previews, per-row errors, and nothing half-imported."""

import json

import pytest

from core.models import AuditEvent
from inventory.models import GPU, NIC, Node, NodeState, Rack
from inventory.selectors.export import inventory_export_nested, inventory_export_records
from inventory.services.transfer import inventory_import
from inventory.transfer import render_csv
from tests.factories import GPUFactory, NodeFactory, RackFactory, SiteFactory, TenantFactory

NODES_CSV = """name,serial,site,rack,position,u_height,bios_profile,tenant,bmc_address,cpu_cores
gpu-fra-101,SN-101,fra1,r01,2,4,performance,,10.10.0.101,192
gpu-fra-102,SN-102,fra1,r01,6,4,confidential-compute,helix,10.10.0.102,192
gpu-fra-103,SN-103,fra1,r02,2,4,baseline,,10.10.0.103,192
"""


@pytest.fixture
def fra1(db):
    site = SiteFactory(slug="fra1", name="Frankfurt 1")
    RackFactory(site=site, name="r01")
    TenantFactory(slug="helix", name="Helix")
    return site


def _counts() -> tuple[int, int, int, int]:
    return Node.objects.count(), GPU.objects.count(), NIC.objects.count(), Rack.objects.count()


def _errors(result) -> dict[int, list[str]]:
    return {row.line: row.errors for row in result.rows if row.errors}


@pytest.mark.django_db
def test_a_dry_run_previews_every_row_and_writes_nothing(fra1):
    result = inventory_import(text=NODES_CSV, fmt="csv", objects="nodes", dry_run=True)

    assert result.ok and not result.applied
    assert [(r.line, r.key, r.action) for r in result.rows] == [
        (2, "gpu-fra-101", "create"), (3, "gpu-fra-102", "create"), (4, "gpu-fra-103", "create"),
    ]
    assert result.rows[1].changes["tenant"] == "helix"
    assert result.rows[2].changes["rack"] == "fra1/r02"  # a new rack in a known site
    assert _counts() == (0, 0, 0, 1)


@pytest.mark.django_db
def test_an_import_creates_discovered_nodes_and_a_second_one_changes_nothing(
    fra1, platform_admin
):
    result = inventory_import(text=NODES_CSV, fmt="csv", objects="nodes", dry_run=False,
                              actor=platform_admin)

    assert result.applied
    node = Node.objects.get(hostname="gpu-fra-102")
    assert (node.state, node.serial, node.rack.name, node.position, node.height_units) == (
        NodeState.DISCOVERED, "SN-102", "r01", 6, 4
    )
    assert (node.bios_profile, node.reserved_for, node.bmc_address) == (
        "confidential-compute", "helix", "10.10.0.102"
    )
    assert Rack.objects.filter(site=fra1, name="r02").exists()
    assert AuditEvent.objects.get(action="inventory.import").changes["create"] == 3

    again = inventory_import(text=NODES_CSV, fmt="csv", objects="nodes", dry_run=False)
    assert [r.action for r in again.rows] == ["unchanged"] * 3


@pytest.mark.django_db
def test_malformed_rows_get_their_own_errors_and_nothing_is_imported(fra1):
    text = (
        "name,serial,site,rack,position,role,bmc_address,cpu_cores\n"
        "gpu-ok-1,SN-1,fra1,r01,2,gpu-worker,10.0.0.1,64\n"
        "gpu-bad-2,SN-2,fra1,r01,two,gpu-worker,10.0.0.2,64\n"
        "gpu-bad-3,SN-3,fra1,r01,10,wizard,10.0.0.300,-4\n"
        "gpu-bad-4,SN-4,mars,r01,14,gpu-worker,,64\n"
        "gpu-bad-5,SN-5,fra1,r01,18,gpu-worker,,64,extra-cell\n"
        ",SN-6,fra1,r01,22,gpu-worker,,64\n"
    )

    result = inventory_import(text=text, fmt="csv", objects="nodes", dry_run=False)

    assert not result.ok and not result.applied
    errors = _errors(result)
    assert sorted(errors) == [3, 4, 5, 6, 7]
    assert errors[3] == ["position: 'two' is not a whole number",
                         "a racked node needs site, rack and position"]
    assert "role: 'wizard' is not one of gpu-worker, cpu-worker, control-plane" in errors[4]
    assert "bmc_address: '10.0.0.300' is not an IP address" in errors[4]
    assert "cpu_cores: must not be negative" in errors[4]
    assert errors[5] == ["site: no site 'mars'"]
    assert errors[6] == ["too many cells"]
    assert errors[7] == ["name: required"]
    assert _counts() == (0, 0, 0, 1)  # the good row was not imported either


@pytest.mark.django_db
def test_duplicate_serials_in_the_file_or_the_inventory_are_refused(fra1):
    NodeFactory(hostname="old-1", serial="SN-OLD")
    text = (
        "name,serial\n"
        "gpu-a,SN-DUP\n"
        "gpu-b,SN-DUP\n"
        "gpu-c,SN-OLD\n"
    )

    result = inventory_import(text=text, fmt="csv", objects="nodes", dry_run=False)

    assert _errors(result) == {
        3: ["duplicate node serial SN-DUP: already gpu-a's (row 2)"],
        4: ["duplicate node serial SN-OLD: already old-1's (the inventory)"],
    }
    assert Node.objects.count() == 1


@pytest.mark.django_db
def test_a_node_in_two_racks_is_refused(fra1):
    text = (
        "name,site,rack,position\n"
        "gpu-a,fra1,r01,2\n"
        "gpu-a,fra1,r02,2\n"
        "gpu-b,fra1,r01,2\n"
    )

    result = inventory_import(text=text, fmt="csv", objects="nodes", dry_run=True)

    assert _errors(result) == {
        3: ["node gpu-a is also in rack fra1/r01 (row 2)"],
        4: ["position: gpu-a already occupies U2 to U2 there"],
    }


@pytest.mark.django_db
def test_gpu_rows_refuse_unknown_models_bad_and_duplicate_uuids(fra1):
    node = NodeFactory(hostname="gpu-a")
    GPUFactory(node=node, index=0, uuid="GPU-11111111-2222-3333-4444-555555555555")
    text = (
        "device,index,model,uuid,mig_layout\n"
        "gpu-a,1,nvidia-h100-80gb,GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee,\n"
        "gpu-a,2,nvidia-h100-80gb,GPU-AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE,\n"
        "gpu-a,3,nvidia-h100-80gb,GPU-11111111-2222-3333-4444-555555555555,\n"
        "gpu-a,4,tesla-t4,,\n"
        "gpu-a,5,nvidia-h100-80gb,not-a-uuid,\n"
        "gpu-a,6,nvidia-l40s,,1g.10gb\n"
        "gpu-zz,0,nvidia-h100-80gb,,\n"
        "gpu-a,1,nvidia-h100-80gb,,\n"
    )

    result = inventory_import(text=text, fmt="csv", objects="gpus", dry_run=False)

    errors = _errors(result)
    assert errors[3] == [
        "duplicate GPU UUID GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee: already gpu-a/GPU1's (row 2)"
    ]
    assert errors[4] == [
        "duplicate GPU UUID GPU-11111111-2222-3333-4444-555555555555: "
        "already gpu-a/GPU0's (the inventory)"
    ]
    assert errors[5][0].startswith("model: unknown GPU model 'tesla-t4'; known: nvidia-h200")
    assert errors[6] == ["uuid: 'not-a-uuid' is not a GPU UUID (GPU-xxxxxxxx-xxxx-…)."]
    assert errors[7] == ["mig_layout: NVIDIA L40S has no MIG profile 1g.10gb"]
    assert errors[8] == ["device: no node 'gpu-zz'"]
    assert errors[9] == ["gpu-a/GPU1 appears twice (row 2)"]
    assert GPU.objects.count() == 1


@pytest.mark.django_db
def test_nic_rows_refuse_duplicate_macs_and_guids_in_any_spelling(fra1):
    node = NodeFactory(hostname="gpu-a")
    NIC.objects.create(node=node, name="eno1", mac_address="0c:42:a1:00:00:01")
    text = (
        "device,name,type,mac_address,ib_guid,speed_gbps,rail\n"
        "gpu-a,eno2,ethernet,0C-42-A1-00-00-01,,100,\n"
        "gpu-a,mlx5_0,infiniband,,0x0c42a10300000001,400,0\n"
        "gpu-a,mlx5_1,infiniband,,0c42:a103:0000:0001,400,1\n"
        "gpu-a,mlx5_2,infiniband,,,400,2\n"
        "gpu-a,eno3,ethernet,zz:zz,,100,\n"
    )

    result = inventory_import(text=text, fmt="csv", objects="nics", dry_run=False)

    assert _errors(result) == {
        2: ["duplicate MAC 0c:42:a1:00:00:01: already gpu-a/eno1's (the inventory)"],
        4: ["duplicate InfiniBand GUID 0c42:a103:0000:0001: already gpu-a/mlx5_0's (row 3)"],
        5: ["ib_guid: an InfiniBand port needs its GUID"],
        6: ["mac_address: 'zz:zz' is not hexadecimal."],
    }
    assert NIC.objects.count() == 1


@pytest.mark.django_db
def test_a_json_document_imports_nodes_with_gpus_and_nics_in_one_go(fra1):
    document = {"nodes": [{
        "name": "gpu-j-1", "serial": "SN-J1", "site": "fra1", "rack": "r01", "position": 10,
        "u_height": 4, "bios_profile": "performance", "cpu_cores": 112, "memory_gib": 2048,
        "gpus": [{"index": i, "model": "nvidia-h100-80gb", "numa_node": i // 4,
                  "nvlink_domain": "nvl-j1", "uuid": f"GPU-0000000{i}-0000-0000-0000-000000000000"}
                 for i in range(8)],
        "nics": [{"name": f"mlx5_{i}", "type": "infiniband", "ib_guid": f"0x0c42a1030000000{i}",
                  "speed_gbps": 400, "fabric": "ib-compute", "rail": i, "numa_node": i // 4}
                 for i in range(8)],
    }]}

    result = inventory_import(text=json.dumps(document), fmt="json", dry_run=False)

    assert result.applied, _errors(result)
    node = Node.objects.get(hostname="gpu-j-1")
    assert node.gpus.count() == 8 and node.nics.count() == 8
    assert node.nics.get(name="mlx5_3").ib_guid == "0c42:a103:0000:0003"
    assert list(node.gpus.values_list("numa_node", flat=True).order_by("index")) == [
        0, 0, 0, 0, 1, 1, 1, 1
    ]


@pytest.mark.django_db
def test_an_export_imports_back_unchanged(fra1):
    node = NodeFactory(hostname="gpu-x", serial="SN-X", rack=Rack.objects.get(name="r01"),
                       position=30, bmc_address="10.1.1.1", reserved_for="helix")
    GPUFactory(node=node, index=0, model="nvidia-a100-80gb", mig_capable=True,
               mig_layout=["3g.40gb", "3g.40gb"])
    NIC.objects.create(node=node, name="mlx5_0", kind="infiniband",
                       ib_guid="0c42:a103:0000:00ff", link_speed_gbps=400)

    document = json.dumps({"nodes": inventory_export_nested()})
    nodes_csv = render_csv(inventory_export_records(objects="nodes"), objects="nodes")
    gpus_csv = render_csv(inventory_export_records(objects="gpus"), objects="gpus")

    for text, fmt, objects in ((document, "json", "nodes"), (nodes_csv, "csv", "nodes"),
                               (gpus_csv, "csv", "gpus")):
        result = inventory_import(text=text, fmt=fmt, objects=objects, dry_run=True)
        assert result.ok, _errors(result)
        assert {r.action for r in result.rows} == {"unchanged"}, [r.changes for r in result.rows]
    assert "status" in nodes_csv.splitlines()[0]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("text", "fmt", "message"),
    [
        ("hostname,serial\nx,y\n", "csv", "Unknown column(s) for nodes: hostname."),
        ("serial\ny\n", "csv", "Missing column(s) for nodes: name."),
        ("{not json", "json", "Not JSON"),
        ('{"racks": []}', "json", 'Expected {"nodes": [...]} or a list of nodes.'),
    ],
)
def test_an_unreadable_file_is_refused_as_a_whole(text, fmt, message):
    result = inventory_import(text=text, fmt=fmt, objects="nodes", dry_run=False)
    assert not result.ok and result.rows == []
    assert result.errors[0].startswith(message)


@pytest.mark.django_db
def test_the_import_api_answers_400_with_row_errors_and_201_when_applied(
    api_client, platform_admin, fra1
):
    api_client.force_login(platform_admin)
    bad = NODES_CSV + "gpu-fra-104,SN-101,fra1,r01,20,4,baseline,,,64\n"

    refused = api_client.post("/api/v1/inventory/import/",
                              {"format": "csv", "data": bad, "dry_run": False}, format="json")
    applied = api_client.post("/api/v1/inventory/import/",
                              {"format": "csv", "data": NODES_CSV, "dry_run": False},
                              format="json")

    assert refused.status_code == 400
    assert refused.json()["rows"][3]["errors"] == [
        "duplicate node serial SN-101: already gpu-fra-101's (row 2)"
    ]
    assert applied.status_code == 201
    assert applied.json()["summary"] == {"create": 3, "update": 0, "unchanged": 0}
    assert Node.objects.count() == 3
