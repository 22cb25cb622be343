"""The workload page's GPU use card: the page only says where to load it from (it never waits on
Prometheus, and makes its pinned queries), and the card, loaded by htmx, shows the workload's
own GPUs from a real Prometheus, or why it cannot: no Prometheus, Prometheus down, no series
yet. Another tenant's workload is not found."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tenants.workloads.models import Workload

from .gpu_series import BOX_POD, CHAT_PODS, H100, gpu_series
from .test_page_queries import DETAIL_QUERIES

pytestmark = pytest.mark.django_db
CARD_QUERIES = 4  # session, user with roles, the workload with its tenant and launcher


@pytest.fixture
def prometheus(prometheus_server, settings):
    settings.PROMETHEUS_URL = prometheus_server(gpu_series()).url


@pytest.fixture
def box(tenant, tenant_member):
    return Workload.objects.create(tenant=tenant, kind="vm", name="box", demand={H100: 1},
                                   status="ready", spec={"running": True},
                                   launched_by=tenant_member, applied_version=1)


@pytest.fixture
def chat(other_tenant):
    return Workload.objects.create(tenant=other_tenant, kind="inference", name="chat",
                                   demand={H100: 2}, status="ready")


def _card(client, workload, query: str = "") -> str:
    response = client.get(f"/t/{workload.tenant.slug}/workloads/{workload.pk}/gpu-use/{query}",
                          headers={"HX-Request": "true"})
    assert response.status_code == 200
    return response.content.decode()


def test_the_page_loads_the_card_after_itself_with_its_pinned_queries(
    login, tenant_member, box, prometheus_down_url, settings
):
    settings.PROMETHEUS_URL = prometheus_down_url  # the page must not even ask
    client = login(tenant_member)
    url = f"/t/acme/workloads/{box.pk}/"
    client.get(url)
    with CaptureQueriesContext(connection) as queries:
        html = client.get(url).content.decode()
    assert len(queries) == DETAIL_QUERIES - 1  # a VM: no endpoint keys to list
    assert (f'id="gpu-use" hx-get="/t/acme/workloads/{box.pk}/gpu-use/" hx-trigger="load"'
            in html)
    assert "js/gpu_use.js" in html and "chart.umd.min.js" in html


def test_a_workload_without_gpus_has_no_card(login, tenant, tenant_member):
    dev = Workload.objects.create(tenant=tenant, kind="vcluster", name="dev",
                                  demand={"cpu": 2}, status="ready", launched_by=tenant_member)
    html = login(tenant_member).get(f"/t/acme/workloads/{dev.pk}/").content.decode()
    assert 'id="gpu-use"' not in html and "gpu_use.js" not in html
    assert "This workload holds no GPUs." in _card(login(tenant_member), dev)


def test_the_card_shows_the_workloads_own_gpus(login, tenant_member, other_tenant_member,
                                               box, chat, prometheus):
    client = login(tenant_member)
    with CaptureQueriesContext(connection) as queries:
        html = _card(client, box)
    assert len(queries) == CARD_QUERIES
    assert 'data-state="ok"' in html and 'data-period="1h"' in html
    summary = re.search(r'id="gpu-use-summary">(.*?)</p>', html, re.S)[1]
    assert re.sub(r"<[^>]+>", "", summary).split("(")[0].strip() == (
        "Mean utilization 40 % · peak memory 1,000 MiB · mean power 100 W"
    )
    assert "(1 GPU)" in summary
    assert html.count("<canvas data-gpu-chart=") == 3
    data = re.search(r'<script id="gpu-use-data" type="application/json">(.*?)</script>',
                     html, re.S)[1]
    assert BOX_POD in data and CHAT_PODS[0] not in data and "boxer" not in data

    theirs = _card(login(other_tenant_member), chat, "?period=24h")
    assert 'data-period="24h"' in theirs
    assert "Mean utilization <strong>40 %</strong> · peak memory <strong>8,000 MiB" in theirs
    assert "(2 GPUs)" in theirs and BOX_POD not in theirs


def test_an_unknown_period_is_the_last_hour(login, tenant_member, box, prometheus):
    html = _card(login(tenant_member), box, "?period=1y")
    assert 'data-period="1h"' in html and 'data-state="ok"' in html


def test_another_tenants_workload_has_no_card(login, tenant_member, other_tenant_member, box,
                                              prometheus):
    assert login(other_tenant_member).get(f"/t/acme/workloads/{box.pk}/gpu-use/"
                                          ).status_code == 404
    assert login(other_tenant_member).get(f"/t/globex/workloads/{box.pk}/gpu-use/"
                                          ).status_code == 404


def test_without_prometheus_the_card_says_what_it_needs(login, tenant_member, box, settings):
    settings.PROMETHEUS_URL = ""
    html = _card(login(tenant_member), box)
    assert 'data-state="not_configured"' in html
    assert "GPU metrics need Prometheus: PROMETHEUS_URL" in html
    assert "<canvas" not in html


def test_prometheus_down_is_said_in_the_card_with_a_retry(login, tenant_member, box, settings,
                                                          prometheus_down_url):
    settings.PROMETHEUS_URL = prometheus_down_url
    html = _card(login(tenant_member), box, "?period=6h")
    assert 'data-state="unavailable"' in html
    assert "Prometheus did not answer: try again." in html
    assert f'id="gpu-use-retry" hx-get="/t/acme/workloads/{box.pk}/gpu-use/?period=6h"' in html


def test_a_workload_that_has_not_run_yet_has_no_series(login, tenant, tenant_member,
                                                       prometheus):
    train = Workload.objects.create(tenant=tenant, kind="slurm", name="train",
                                    demand={H100: 4}, status="provisioning")
    html = _card(login(tenant_member), train)
    assert 'data-state="no_series"' in html
    assert "have not run on their GPUs long enough yet" in html
