"""The API's lighter fields (portal.api.fields) answer exactly what DRF's own fields answer."""

import pytest
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from tenants.quota.models import QuotaRequest, QuotaRequestLine
from tenants.quota.selectors import quota_requests_listed_to, quota_requests_visible_to
from tenants.quota.serializers import QuotaRequestLineSerializer, QuotaRequestSerializer
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


class StockQuotaRequestSerializer(QuotaRequestSerializer):
    """The quota request serializer with DRF's own list of lines."""

    class StockLineSerializer(QuotaRequestLineSerializer):
        class Meta(QuotaRequestLineSerializer.Meta):
            list_serializer_class = serializers.ListSerializer

    lines = StockLineSerializer(many=True, read_only=True)


def _quota_requests(tenant, user) -> None:
    for n in range(3):
        quota_request = QuotaRequest.objects.create(
            tenant=tenant, requested_by=user, justification=f"need {n}"
        )
        for resource in ["gpu:nvidia-h100-80gb", "cpu", "count:inference"][: n + 1]:
            QuotaRequestLine.objects.create(request=quota_request, resource=resource, amount=n + 2)


def test_quota_requests_listed_are_what_drfs_own_list_gives(tenant, platform_admin):
    _quota_requests(tenant, platform_admin)
    stock = StockQuotaRequestSerializer(quota_requests_visible_to(platform_admin), many=True).data

    listed = list(quota_requests_listed_to(platform_admin))
    light = QuotaRequestSerializer(listed, many=True).data

    assert light == stock
    assert [len(r["lines"]) for r in light] == [3, 2, 1]
    # The lines as plain lists, read with the requests: no query and no queryset per request.
    assert all(isinstance(r.lines_prefetched, list) for r in listed)
    assert all(not getattr(r, "_prefetched_objects_cache", None) for r in listed)


def test_a_request_fetched_without_the_prefetch_reads_its_lines_as_before(tenant, platform_admin):
    _quota_requests(tenant, platform_admin)
    quota_request = QuotaRequest.objects.order_by("pk").last()

    light = QuotaRequestSerializer(quota_request).data

    assert light == StockQuotaRequestSerializer(quota_request).data
    assert [line["resource"] for line in light["lines"]] == [
        "gpu:nvidia-h100-80gb",
        "cpu",
        "count:inference",
    ]
