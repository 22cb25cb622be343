"""The API's lighter fields (portal.api.fields) answer exactly what DRF's own fields answer."""

import pytest
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from tenants.workloads.models import Workload, WorkloadStatus
from tenants.workloads.serializers import WorkloadSerializer

pytestmark = pytest.mark.django_db


class StockWorkloadSerializer(WorkloadSerializer):
    """The workload serializer with DRF's fields where the API has the lighter ones."""

    url = serializers.HyperlinkedIdentityField(view_name="api:workload-detail")
    status_label = serializers.CharField(source="get_status_display", read_only=True)


def _workloads(tenant) -> list[Workload]:
    statuses = [WorkloadStatus.READY, WorkloadStatus.PENDING, WorkloadStatus.FAILED]
    for n, status in enumerate(statuses):
        Workload.objects.create(
            tenant=tenant,
            kind="inference",
            name=f"chat-{n}",
            status=status,
            demand={"gpu:nvidia-h100-80gb": n + 1},
        )
    return list(Workload.objects.select_related("tenant", "launched_by").order_by("pk"))


@pytest.mark.parametrize("host", ["127.0.0.1", "portal.example.org:8443"])
def test_a_workload_list_is_what_drfs_own_fields_give(tenant, host, settings):
    settings.ALLOWED_HOSTS = ["*"]
    workloads = _workloads(tenant)
    request = Request(APIRequestFactory().get("/api/v1/workloads/", HTTP_HOST=host))

    light = WorkloadSerializer(workloads, many=True, context={"request": request}).data
    stock = StockWorkloadSerializer(workloads, many=True, context={"request": request}).data

    assert light == stock
    assert light[0]["url"] == f"http://{host}/api/v1/workloads/{workloads[0].pk}/"
    assert [row["status_label"] for row in light] == ["Ready", "Pending", "Failed"]


def test_the_workload_api_answers_each_row_its_own_url(api_client, platform_admin, tenant):
    workloads = _workloads(tenant)
    api_client.force_authenticate(platform_admin)

    rows = api_client.get("/api/v1/workloads/").json()["results"]

    assert {row["url"].rsplit("/", 2)[-2] for row in rows} == {str(w.pk) for w in workloads}
    assert len({row["url"] for row in rows}) == len(workloads)
