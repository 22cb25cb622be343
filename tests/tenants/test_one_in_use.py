"""Issue 29, item 8: "in use" means one thing. The tenant dashboard, the quota page, the quota
request's preview, the admin review and the fleet's capacity all show what the tenant's
workloads hold; where the cluster's own figure (the ResourceQuota's status, the pods the cluster
sync saw) differs, it is shown beside, labelled in visible text. vCPUs and memory in use are
counted in the fleet's capacity table."""

import re

import pytest
from django.urls import reverse

from inventory.models import Node
from tenants.models import Quota
from tenants.quota.capacity import capacity_by_resource_class
from tenants.workloads.models import Workload, WorkloadStatus
from tests.factories import GPUFactory, NodeFactory, QuotaFactory

pytestmark = pytest.mark.django_db

H100 = "gpu:nvidia-h100-80gb"


@pytest.fixture
def holding(tenant):
    """8 healthy H100s, the pods on them asking for 5 (as the cluster sync saw); the tenant's
    workloads hold 3 H100s, 12 vCPUs and 96 GiB; its ResourceQuota last said 5 GPUs."""
    node = NodeFactory(hostname="h100-a", gpus_in_use=5)
    for index in range(8):
        GPUFactory(node=node, index=index, model="nvidia-h100-80gb")
    QuotaFactory(tenant=tenant, resource=H100, limit=8, in_use=5)
    QuotaFactory(tenant=tenant, resource="cpu", limit=64, in_use=12)
    QuotaFactory(tenant=tenant, resource="memory-gib", limit=512, in_use=96)
    for name, status, gpus in (("a", WorkloadStatus.READY, 2), ("b", WorkloadStatus.FAILED, 1)):
        Workload.objects.create(tenant=tenant, kind="vcluster", name=name, status=status,
                                demand={H100: gpus, "cpu": 6, "memory-gib": 48})
    Workload.objects.create(tenant=tenant, kind="vcluster", name="gone",
                            status=WorkloadStatus.DELETED, demand={H100: 8, "cpu": 99})


def _cell(html: str, resource: str, table_id: str | None = None) -> str:
    if table_id:
        html = html.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    row = re.search(rf'data-resource="{re.escape(resource)}".*?</tr>', html, re.S).group(0)
    return re.search(r"<td[^>]*data-in-use=.*?</td>", row, re.S).group(0)


def _words(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_every_tenant_page_shows_what_workloads_hold_and_the_clusters_figure_labelled(
    login, tenant_member, holding
):
    client = login(tenant_member)

    dashboard = client.get(reverse("tenants:dashboard", args=["acme"])).content.decode()
    assert "in use (held by workloads) / granted" in dashboard
    assert 'data-used="3"' in dashboard and "cluster reports 5" in dashboard

    quota = client.get(reverse("tenants:quota-detail", args=["acme"])).content.decode()
    assert _words(_cell(quota, H100)) == "3 cluster reports 5"
    assert _words(_cell(quota, "cpu")) == "12"  # the cluster agrees: one figure
    assert "held by workloads" in quota

    preview = client.post(
        reverse("tenants:quota-request-preview", args=["acme"]),
        {"lines-TOTAL_FORMS": "1", "lines-INITIAL_FORMS": "0", "lines-MIN_NUM_FORMS": "1",
         "lines-MAX_NUM_FORMS": "1000", "justification": "More.", "ends_on": "",
         "lines-0-resource": H100, "lines-0-amount": "2"},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    row = re.search(rf'data-resource="{H100}".*?</tr>', preview, re.S).group(0)
    assert 'data-in-use="3"' in row
    assert "3 in use (held by workloads); cluster reports 5" in _words(row)


def test_the_admin_review_shows_the_same_figures(login, platform_admin, submit, holding):
    request = submit({H100: 2})
    html = login(platform_admin).get(
        reverse("admin:tenants_quotarequest_change", args=[request.pk])
    ).content.decode()
    assert _words(_cell(html, H100, "review-lines")) == "3 cluster reports 5"
    tenant_quota = html.split('id="tenant-quota"', 1)[1].split("</table>", 1)[0]
    assert 'data-in-use="3"' in tenant_quota and "cluster reports 5" in tenant_quota
    assert "held by workloads" in html


def test_fleet_capacity_counts_what_workloads_hold_vcpus_and_memory_included(
    login, tenant_member, holding, other_tenant
):
    Workload.objects.create(tenant=other_tenant, kind="vcluster", name="c",
                            status=WorkloadStatus.PROVISIONING,
                            demand={H100: 1, "cpu": 4, "memory-gib": 16})
    rows = {row.resource: row for row in capacity_by_resource_class()}
    assert (rows[H100].in_use, rows[H100].cluster_in_use) == (4, 5)
    assert (rows["cpu"].in_use, rows["cpu"].cluster_in_use) == (16, None)
    assert rows["memory-gib"].in_use == 112

    html = login(tenant_member).get("/fleet/capacity/").content.decode()
    assert _words(_cell(html, H100)) == "4 cluster reports 5"
    assert _words(_cell(html, "cpu")) == "16"
    assert _words(_cell(html, "memory-gib")) == "112"
    assert "held by workloads" in html

    # Once the cluster agrees, one figure is shown.
    Quota.objects.filter(resource=H100).update(in_use=3)
    Node.objects.update(gpus_in_use=4)
    html = login(tenant_member).get("/fleet/capacity/").content.decode()
    assert _words(_cell(html, H100)) == "4"
    quota = login(tenant_member).get(reverse("tenants:quota-detail", args=["acme"]))
    assert _words(_cell(quota.content.decode(), H100)) == "3"
