"""Issue 35, part 4: a free cost label set on launch (form and API), validated, shown on the
workload's pages and in the API, and a filter of the list (page and API)."""

import pytest

from core.models import AuditEvent
from tenants.workloads import services
from tenants.workloads.models import Workload

from .conftest import H100, INFERENCE_SPEC

pytestmark = pytest.mark.django_db

FORM = {
    "name": "chat", "model_uri": INFERENCE_SPEC["model_uri"], "gpu": H100,
    "gpus_per_replica": "1", "min_replicas": "1", "max_replicas": "1", "cpu": "4",
    "memory_gib": "32",
}
SPEC = {**INFERENCE_SPEC, "max_replicas": 1}


@pytest.fixture
def quota(gpu_pool, workload_quota):
    workload_quota()


def _launched(tenant, who, name: str, label: str = "") -> Workload:
    return services.workload_launch(tenant=tenant, actor=who, kind="inference", name=name,
                                    spec=SPEC, label=label)


def test_the_api_launches_with_a_label_and_lists_by_it(
    api_client, tenant, tenant_member, quota, simulated_gateway
):
    api_client.force_login(tenant_member)
    response = api_client.post("/api/v1/workloads/", {
        "tenant": "acme", "kind": "inference", "name": "chat", "spec": SPEC,
        "label": "  llama ft.v2_a  "}, format="json")
    assert response.status_code == 202, response.content[:400]
    assert response.json()["label"] == "llama ft.v2_a"
    _launched(tenant, tenant_member, "other", label="else")
    _launched(tenant, tenant_member, "plain")

    listed = api_client.get("/api/v1/workloads/", {"label": "llama ft.v2_a"}).json()

    assert [w["name"] for w in listed["results"]] == ["chat"]
    event = AuditEvent.objects.get(action="workload.launch", object_id=str(
        Workload.objects.get(name="chat").pk))
    assert event.changes["label"] == "llama ft.v2_a"


@pytest.mark.parametrize("label", ["=cmd|x", "a" * 64, "tab\there", "   "])
def test_a_bad_label_is_a_field_error_and_launches_nothing(
    api_client, tenant_member, quota, simulated_gateway, label
):
    api_client.force_login(tenant_member)
    response = api_client.post("/api/v1/workloads/", {
        "tenant": "acme", "kind": "inference", "name": "chat", "spec": SPEC, "label": label},
        format="json")

    if label.strip():
        assert response.status_code == 400
        assert "label" in response.json()["error"]["fields"]
        assert not Workload.objects.exists()
    else:  # only spaces: no label
        assert response.status_code == 202 and Workload.objects.get().label == ""


def test_the_form_launches_with_a_label_shown_on_the_pages(
    login, tenant, tenant_member, quota, simulated_gateway
):
    client = login(tenant_member)
    response = client.post("/t/acme/workloads/new/inference/", {**FORM, "label": "exp-7"})
    workload = Workload.objects.get()
    assert response.status_code == 302 and workload.label == "exp-7"
    _launched(tenant, tenant_member, "other", label="exp-8")

    detail = client.get(f"/t/acme/workloads/{workload.pk}/").content.decode()
    listed = client.get("/t/acme/workloads/", {"label": "exp-7"}).content.decode()

    assert 'id="workload-label"' in detail and "exp-7" in detail
    assert f'id="workload-{workload.pk}"' in listed and "other" not in listed
    assert 'id="filter-label"' in listed


def test_the_form_refuses_a_bad_label(login, tenant_member, quota, simulated_gateway):
    client = login(tenant_member)
    response = client.post("/t/acme/workloads/new/inference/", {**FORM, "label": "<b>x</b>"})

    assert response.status_code == 200 and not Workload.objects.exists()
    assert "letters, digits, spaces" in response.content.decode()
