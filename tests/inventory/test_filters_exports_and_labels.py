"""Fleet pages say what they count, refuse what they cannot filter or export, and format numbers."""

import pytest

from inventory.models import GPU, NodeState
from tests.factories import GPUFactory, NodeFactory

from .fleets import build_fleet

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("state=broken", "Select a valid choice"),
        ("health=so-so", "Select a valid choice"),
        ("model=nvidia-b300", "Select a valid choice"),
        ("site=atlantis", "Select a valid choice"),
        ("rack=twelve", "Enter a number"),
        ("stat=available", "There is no filter “stat”"),
    ],
)
def test_an_unknown_filter_value_is_a_400_that_says_so_not_every_node(
    login, platform_admin, query, message
):
    build_fleet(4)
    response = login(platform_admin).get(f"/fleet/nodes/?{query}")

    assert response.status_code == 400
    page = response.content.decode()
    assert 'id="filter-errors"' in page and message in page
    assert 'data-node=' not in page  # nothing listed as if the filter had been applied


def test_a_known_filter_still_filters(login, platform_admin):
    build_fleet(8)
    response = login(platform_admin).get("/fleet/nodes/?state=maintenance")
    assert response.status_code == 200
    assert 'id="filter-errors"' not in response.content.decode()


def test_the_node_api_answers_an_unknown_filter_value_with_a_field_error(
    api_client, platform_admin
):
    api_client.force_login(platform_admin)
    response = api_client.get("/api/v1/nodes/?state=broken")
    assert response.status_code == 400
    assert "state" in str(response.json())


def test_the_quota_request_api_answers_an_unknown_status_filter_with_a_field_error(
    api_client, tenant_member
):
    api_client.force_login(tenant_member)
    response = api_client.get("/api/v1/quota-requests/?status=granted")
    assert response.status_code == 400
    assert "status" in str(response.json())


@pytest.mark.parametrize(
    ("query", "named"),
    [("format=xlsx", "“xlsx” is not a format"), ("format=csv&objects=racks", "“racks” is not a")],
)
def test_an_unknown_export_is_a_400_page_not_a_csv(login, platform_admin, query, named):
    response = login(platform_admin).get(f"/fleet/export/?{query}")

    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
    assert named in response.content.decode()


def test_the_export_api_answers_an_unknown_format_with_a_field_error(api_client, platform_admin):
    api_client.force_login(platform_admin)
    response = api_client.get("/api/v1/inventory/export/?as=xlsx")
    assert response.status_code == 400
    assert "as" in str(response.json())
    assert api_client.get("/api/v1/inventory/export/?as=csv").status_code == 200


def test_the_overview_names_gpu_health_and_units_in_service_differently(login, platform_admin):
    node = NodeFactory(state=NodeState.CORDONED)
    for index in range(4):
        GPUFactory(node=node, index=index, health=GPU.Health.HEALTHY)
    page = login(platform_admin).get("/fleet/").content.decode()

    # The chart counts GPUs reporting healthy (4); the table counts units in service (0).
    assert ">In service</th>" in page and ">Healthy</th>" not in page
    assert '"healthy": 4' in page  # the chart's data
    with open("static/js/fleet.js") as script:
        assert 'label: "Reporting healthy"' in script.read()


def test_large_counts_carry_thousands_separators(login, platform_admin):
    node = NodeFactory(cpu_cores=1024, memory_gib=2048)
    GPUFactory(node=node, index=0, memory_gib=1536, ecc_sbe_count=12345, retired_pages=1200)
    page = login(platform_admin).get(f"/fleet/nodes/{node.pk}/").content.decode()

    for shown in ("1,024 vCPU", "2,048 GiB", "1,536 GiB", "12,345", "1,200 pages"):
        assert shown in page, shown
