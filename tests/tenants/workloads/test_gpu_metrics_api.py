"""A workload's GPU use in the API (`/api/v1/workloads/<id>/gpu-metrics/`), from a real
Prometheus: its own GPUs' points and summary; a bad period is a 400 naming the field;
Prometheus down is a 503 in the error format; another tenant's workload is a 404; and the
schema says so."""

from datetime import datetime

import pytest
from drf_spectacular.generators import SchemaGenerator

from tenants.workloads.models import Workload

from .gpu_series import BOX_POD, CHAT_PODS, box_and_chat, gpu_series

pytestmark = pytest.mark.django_db


@pytest.fixture
def prometheus(prometheus_server, settings):
    settings.PROMETHEUS_URL = prometheus_server(gpu_series()).url


@pytest.fixture
def workloads(tenant, other_tenant):
    return box_and_chat(tenant, other_tenant)


@pytest.fixture
def box(workloads):
    return workloads[0]


@pytest.fixture
def chat(workloads):
    return workloads[1]


def _get(api_client, user, workload, query: str = ""):
    api_client.force_login(user)
    return api_client.get(f"/api/v1/workloads/{workload.pk}/gpu-metrics/{query}")


def test_the_api_answers_the_workloads_own_gpus(api_client, tenant_member, other_tenant_member,
                                                box, chat, prometheus):
    body = _get(api_client, tenant_member, box).json()
    assert (body["state"], body["period"], body["step_seconds"]) == ("ok", "1h", 30)
    assert body["summary"] == {"mean_utilization": 40.0, "peak_memory_mib": 1000.0,
                               "mean_power_watts": 100.0}
    (gpu,) = body["gpus"]
    assert {k: gpu[k] for k in ("pod", "host", "gpu", "model", "mig_profile")} == {
        "pod": BOX_POD, "host": "gpu-a-001", "gpu": "0", "model": "NVIDIA H100 80GB HBM3",
        "mig_profile": "",
    }
    # A point every 30 s (on the step's grid) up to now, as long as the series reach.
    times = [at for at, _ in gpu["utilization"]]
    assert 0 < len(times) <= 121 and all(at % 30 == 0 for at in times)
    assert times[-1] <= datetime.fromisoformat(body["end"]).timestamp()
    assert {value for _, value in gpu["power_watts"]} == {100.0}

    theirs = _get(api_client, other_tenant_member, chat, "?period=7d").json()
    assert (theirs["period"], theirs["step_seconds"]) == ("7d", 3600)
    assert [g["pod"] for g in theirs["gpus"]] == list(CHAT_PODS)
    assert theirs["summary"]["peak_memory_mib"] == 8000.0


def test_a_bad_period_is_a_400_naming_the_field(api_client, tenant_member, box, prometheus):
    response = _get(api_client, tenant_member, box, "?period=1y")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and "period" in error["fields"]


def test_prometheus_down_is_a_503_in_the_error_format(api_client, tenant_member, box, settings,
                                                      prometheus_down_url):
    settings.PROMETHEUS_URL = prometheus_down_url
    response = _get(api_client, tenant_member, box)
    assert response.status_code == 503
    assert response.json() == {"error": {"status": 503, "code": "unavailable",
                                         "message": "Prometheus did not answer: try again."}}


def test_another_tenants_workload_is_not_found(api_client, other_tenant_member, box,
                                               prometheus):
    response = _get(api_client, other_tenant_member, box)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert _get(api_client, other_tenant_member, box, "?period=1y").status_code == 404


def test_why_there_is_nothing_to_show(api_client, tenant, tenant_member, box, settings):
    settings.PROMETHEUS_URL = ""
    body = _get(api_client, tenant_member, box).json()
    assert (body["state"], body["gpus"]) == ("not_configured", [])
    assert body["summary"] == {"mean_utilization": None, "peak_memory_mib": None,
                               "mean_power_watts": None}
    assert "PROMETHEUS_URL" in body["message"]
    dev = Workload.objects.create(tenant=tenant, kind="vcluster", name="dev", demand={"cpu": 2})
    assert _get(api_client, tenant_member, dev).json()["state"] == "no_gpus"


def test_the_schema_documents_the_period_the_answer_and_the_503():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    operation = schema["paths"]["/api/v1/workloads/{id}/gpu-metrics/"]["get"]
    (period,) = [p for p in operation["parameters"] if p["name"] == "period"]
    assert period["in"] == "query" and period["schema"]["enum"] == ["1h", "6h", "24h", "7d"]
    answer = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert answer == {"$ref": "#/components/schemas/GpuMetrics"}
    assert set(schema["components"]["schemas"]["GpuMetrics"]["properties"]) == {
        "state", "message", "period", "start", "end", "step_seconds", "summary", "gpus"
    }
    unavailable = operation["responses"]["503"]["content"]["application/json"]["schema"]
    assert unavailable == {"$ref": "#/components/schemas/Error"}
