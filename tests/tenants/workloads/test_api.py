"""The workloads API against the Kubernetes API emulator over HTTP: launch (202 + Location),
check, follow, scale, power, delete, the timeline and a vCluster's kubeconfig, with the pages'
rules; bad input is a 400 naming the field, with nothing stored and nothing sent to the cluster;
another tenant's workload is a 404 everywhere, with nothing changed."""

import base64
import json

import pytest
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from core.models import AuditEvent
from core.tokens import api_token_create
from tenants.models import Membership
from tenants.workloads import services
from tenants.workloads.kinds import vcluster
from tenants.workloads.models import VmImage, Workload, WorkloadEvent, WorkloadStatus
from tests.factories import GPUFactory, MembershipFactory, NodeFactory, TenantFactory, UserFactory

from .conftest import H100, INFERENCE_SPEC, ready_inference_service
from .openssh_keys import ed25519_public

pytestmark = pytest.mark.django_db

ISVC = ("serving.kserve.io/v1beta1", "InferenceService")
HELM_RELEASE = ("helm.toolkit.fluxcd.io/v2", "HelmRelease")
KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: dev
  cluster:
    server: https://dev.tenant-acme.svc:443
contexts:
- name: dev
  context: {cluster: dev, user: dev}
current-context: dev
users:
- name: dev
  user: {token: not-a-real-token}
"""
WRITES = ("POST", "PUT", "PATCH", "DELETE")


def minimal_specs() -> dict[str, dict]:
    """Each kind's smallest valid spec (a VM needs a boot image and a real OpenSSH key)."""
    return {
        "vcluster": {},
        "inference": {"model_uri": "hf://meta-llama/Llama-3.1-8B-Instruct", "gpu": H100},
        "vm": {"image": "ubuntu-24.04", "cpu": 2, "memory_gib": 4, "disk_gib": 20,
               "ssh_public_key": ed25519_public()},
        "slurm": {"workers": 1, "gpu": H100, "gpus_per_worker": 1, "cpu_per_worker": 4,
                  "memory_gib_per_worker": 16},
    }


@pytest.fixture
def as_user(api_client):
    def _as(user):
        api_client.force_login(user)
        return api_client

    return _as


@pytest.fixture
def fleet(gpu_pool, workload_quota, kube_gateway, kube_emulator):
    """The tenant's pool and quota, a boot image, and the emulated cluster behind the gateway."""
    workload_quota()
    VmImage.objects.create(
        key="ubuntu-24.04", label="Ubuntu 24.04", min_disk_gib=20, default_user="ubuntu",
        container_disk="quay.io/containerdisks/ubuntu:24.04",
    )
    return kube_emulator


def writes(kube_emulator) -> list:
    return [r for r in kube_emulator.requests() if r.method in WRITES]


def launch(client, *, kind="inference", name="chat", spec=None, tenant="acme"):
    body = {"tenant": tenant, "kind": kind, "name": name,
            "spec": INFERENCE_SPEC if spec is None else spec}
    return client.post("/api/v1/workloads/", body, format="json")


def fields_of(response) -> dict:
    assert response.status_code == 400, response.content[:500]
    error = response.json()["error"]
    assert error["code"] == "invalid"
    return error["fields"]


@pytest.fixture
def chat(fleet, tenant, tenant_member):
    """A launched inference endpoint (pending: its reconcile would follow the commit)."""
    return services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                    name="chat", spec=INFERENCE_SPEC)


# --- launch -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["vcluster", "inference", "vm", "slurm"])
def test_each_kind_launches_with_its_minimal_spec_and_is_accepted(
    as_user, tenant_member, fleet, kind, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = launch(as_user(tenant_member), kind=kind, name=f"my-{kind}",
                          spec=minimal_specs()[kind])

    assert response.status_code == 202, response.content[:500]
    body = response.json()
    workload = Workload.objects.get()
    assert response["Location"] == body["url"]
    assert body["url"] == f"http://testserver/api/v1/workloads/{workload.pk}/"
    assert (body["id"], body["tenant"], body["kind"], body["name"]) == (
        workload.pk, "acme", kind, f"my-{kind}"
    )
    assert body["status"] == "pending" and body["launched_by"] == "member"
    assert body["demand"] == workload.demand and body["demand"][f"count:{kind}"] == 1
    assert workload.launched_by == tenant_member
    # The reconcile, after commit (an endpoint with a minimum: its tenant's too, for its queue);
    # the launch itself sent nothing.
    assert len(queued) == (2 if kind == "inference" else 1)
    assert writes(fleet) == []


def test_a_launch_is_applied_on_the_cluster_after_commit(
    as_user, tenant, tenant_member, fleet, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = launch(as_user(tenant_member))

    assert response.status_code == 202
    stored = fleet.get_object(*ISVC, "chat", tenant.namespace)
    assert stored["metadata"]["labels"]["portal.ai-factory.io/workload-id"] == str(
        response.json()["id"]
    )
    assert Workload.objects.get().status == WorkloadStatus.PROVISIONING


def test_a_vm_launches_from_its_own_image(as_user, tenant_member, fleet):
    spec = {"custom_image": "ghcr.io/acme/images/rocky:9.4", "default_user": "rocky", "cpu": 2,
            "memory_gib": 4, "disk_gib": 30, "ssh_public_key": ed25519_public()}

    response = launch(as_user(tenant_member), kind="vm", name="rocky", spec=spec)

    assert response.status_code == 202, response.content[:500]
    assert response.json()["spec"]["container_disk"] == "ghcr.io/acme/images/rocky:9.4"


BAD_LAUNCHES = {
    "not-a-dns-label": ({"name": "Chat_Bot"}, "name"),
    "name-too-long": ({"name": "a" * 64}, "name"),
    "name-not-text": ({"name": ["chat"]}, "name"),
    "name-number": ({"name": 42}, "name"),
    "name-nul": ({"name": "chat\x00"}, "name"),
    "unknown-kind": ({"kind": "mainframe"}, "kind"),
    "spec-not-object": ({"spec": ["hf://a/b"]}, "spec"),
    "zero-gpus": ({"spec": INFERENCE_SPEC | {"gpus_per_replica": 0}}, "spec.gpus_per_replica"),
    "negative-replicas": ({"spec": INFERENCE_SPEC | {"min_replicas": -1}}, "spec.min_replicas"),
    "more-gpus-than-a-node": (
        {"spec": INFERENCE_SPEC | {"gpus_per_replica": 9}}, "spec.gpus_per_replica"
    ),
    "unknown-uri-scheme": ({"spec": INFERENCE_SPEC | {"model_uri": "ftp://x/y"}}, "spec.model_uri"),
    "min-above-max": (
        {"spec": INFERENCE_SPEC | {"min_replicas": 3, "max_replicas": 2}}, "spec.min_replicas"
    ),
    "replicas-as-text": (
        {"spec": INFERENCE_SPEC | {"max_replicas": "two"}}, "spec.max_replicas"
    ),
    "replicas-as-boolean": ({"spec": INFERENCE_SPEC | {"max_replicas": True}}, "spec.max_replicas"),
    "replicas-as-float": ({"spec": INFERENCE_SPEC | {"max_replicas": 1.5}}, "spec.max_replicas"),
    "uri-as-object": ({"spec": INFERENCE_SPEC | {"model_uri": {"hf": "a/b"}}}, "spec.model_uri"),
    "nul-in-spec-text": (
        {"spec": INFERENCE_SPEC | {"model_uri": "hf://meta-llama/Llama\x00"}}, "spec.model_uri"
    ),
    "nul-in-spec-key": ({"spec": INFERENCE_SPEC | {"gpu\x00": H100}}, "spec"),
    "huge-number": ({"spec": INFERENCE_SPEC | {"max_replicas": 10**30}}, "spec.max_replicas"),
    "huger-number": ({"spec": INFERENCE_SPEC | {"cpu": 10**300}}, "spec.cpu"),
    "vm-negative-cpu": ({"kind": "vm", "spec": minimal_specs()["vm"] | {"cpu": -2}}, "spec.cpu"),
    "vm-zero-disk": ({"kind": "vm", "spec": minimal_specs()["vm"] | {"disk_gib": 0}},
                     "spec.disk_gib"),
    "vm-not-a-key": ({"kind": "vm", "spec": minimal_specs()["vm"] | {"ssh_public_key": "hi"}},
                     "spec.ssh_public_key"),
    "slurm-negative-workers": (
        {"kind": "slurm", "spec": minimal_specs()["slurm"] | {"workers": -1}}, "spec.workers"
    ),
    "vcluster-unknown-version": (
        {"kind": "vcluster", "spec": {"kubernetes_version": "1.20"}}, "spec.kubernetes_version"
    ),
}


@pytest.mark.parametrize(("change", "field"), BAD_LAUNCHES.values(), ids=BAD_LAUNCHES.keys())
def test_bad_input_is_a_400_naming_the_field_with_nothing_created_or_sent(
    as_user, tenant_member, fleet, change, field, django_capture_on_commit_callbacks
):
    body = {"tenant": "acme", "kind": "inference", "name": "chat", "spec": INFERENCE_SPEC}
    with django_capture_on_commit_callbacks(execute=True):
        response = as_user(tenant_member).post("/api/v1/workloads/", body | change, format="json")

    assert field in fields_of(response)
    assert not Workload.objects.exists()
    assert writes(fleet) == []


def test_a_taken_name_is_a_400_on_name(as_user, tenant_member, chat, fleet):
    fields = fields_of(launch(as_user(tenant_member), kind="vcluster", name="chat", spec={}))

    assert "taken" in fields["name"][0]
    assert Workload.objects.count() == 1
    assert writes(fleet) == []


def test_a_gpu_class_without_quota_is_a_400_on_the_gpu(as_user, tenant_member, fleet):
    GPUFactory(node=NodeFactory(reserved_for=""), model="nvidia-l40s")  # in the pool, no quota

    response = launch(as_user(tenant_member), spec=INFERENCE_SPEC | {"gpu": "gpu:nvidia-l40s"})

    assert "quota" in fields_of(response)["spec.gpu"][0].lower()
    assert not Workload.objects.exists()


def test_every_field_error_comes_at_once(as_user, tenant_member, fleet):
    response = launch(as_user(tenant_member), name="Bad Name",
                      spec=INFERENCE_SPEC | {"model_uri": "ftp://x", "max_replicas": 0})

    assert {"name", "spec.model_uri", "spec.max_replicas"} <= set(fields_of(response))


def test_a_launch_over_quota_is_a_400_on_quota(as_user, tenant_member, gpu_pool, workload_quota,
                                               kube_gateway, kube_emulator):
    workload_quota(**{H100: 1})  # the endpoint holds max_replicas (2) GPUs

    fields = fields_of(launch(as_user(tenant_member)))

    assert "H100" in fields["quota"][0]
    assert not Workload.objects.exists()
    assert writes(kube_emulator) == []


@pytest.mark.parametrize("body", [[1, 2], "chat", 7], ids=["list", "string", "number"])
def test_a_body_that_is_not_an_object_is_a_400(as_user, tenant_member, fleet, body):
    response = as_user(tenant_member).post("/api/v1/workloads/", body, format="json")

    assert "non_field_errors" in fields_of(response)


def test_a_number_too_long_to_read_is_a_parse_error(as_user, tenant_member, fleet):
    body = '{"tenant": "acme", "kind": "vcluster", "name": "dev", "spec": {"cpu": %s}}' % (
        "9" * 5000
    )
    response = as_user(tenant_member).generic(
        "POST", "/api/v1/workloads/", body, content_type="application/json"
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "parse_error"
    assert not Workload.objects.exists()


def test_a_suspended_tenant_launches_nothing(as_user, tenant, platform_admin, fleet):
    tenant.status = tenant.Status.SUSPENDED
    tenant.save(update_fields=["status"])

    fields = fields_of(launch(as_user(platform_admin), kind="vcluster", name="dev", spec={}))

    assert "tenant" in fields
    assert not Workload.objects.exists()


# --- check ------------------------------------------------------------------------------------


def test_check_answers_the_clean_spec_demand_and_quota_without_launching(
    as_user, tenant_member, fleet
):
    response = as_user(tenant_member).post(
        "/api/v1/workloads/check/",
        {"tenant": "acme", "kind": "inference", "name": "chat", "spec": INFERENCE_SPEC},
        format="json",
    )

    assert response.status_code == 200, response.content[:500]
    body = response.json()
    assert body["spec"]["max_replicas"] == 2 and body["spec"]["cpu"] == 4  # defaults filled in
    assert body["demand"] == {H100: 2, "cpu": 8, "memory-gib": 64, "count:inference": 1}
    lines = {line["resource"]: line for line in body["quota"]}
    assert lines[H100] | {"label": ""} == {
        "resource": H100, "label": "", "asked": 2, "held": 0, "limit": 4, "left_after": 2,
        "fits": True, "percent_after": 50,
    }
    assert body["fits"] is True
    assert not Workload.objects.exists()
    assert writes(fleet) == []


def test_check_says_when_the_quota_would_not_have_it(as_user, tenant_member, chat, fleet):
    response = as_user(tenant_member).post(
        "/api/v1/workloads/check/",
        {"tenant": "acme", "kind": "inference", "spec": INFERENCE_SPEC | {"max_replicas": 3}},
        format="json",
    )

    body = response.json()
    line = next(line for line in body["quota"] if line["resource"] == H100)
    assert (line["held"], line["asked"], line["fits"]) == (2, 3, False)
    assert body["fits"] is False
    assert Workload.objects.count() == 1


@pytest.mark.parametrize(
    ("change", "field"),
    [({"spec": {"model_uri": "ftp://x/y", "gpu": H100}}, "spec.model_uri"),
     ({"kind": "tape-drive"}, "kind"),
     ({"name": "Not A Label"}, "name"),
     ({"spec": {"gpu": "x\x00"}}, "spec.gpu")],
    ids=["bad-spec", "bad-kind", "bad-name", "nul"],
)
def test_check_refuses_bad_input_with_field_errors(as_user, tenant_member, fleet, change, field):
    body = {"tenant": "acme", "kind": "inference", "spec": INFERENCE_SPEC} | change

    response = as_user(tenant_member).post("/api/v1/workloads/check/", body, format="json")

    assert field in fields_of(response)


# --- reading ----------------------------------------------------------------------------------


def test_the_detail_says_everything_about_a_ready_endpoint(
    as_user, tenant, tenant_member, chat, fleet
):
    services.workload_reconcile(workload_id=chat.pk)
    ready_inference_service(fleet, name="chat", namespace=tenant.namespace)
    services.workload_observe(workload_id=chat.pk)

    body = as_user(tenant_member).get(f"/api/v1/workloads/{chat.pk}/").json()

    assert body["status"] == "ready" and body["status_label"] == "Ready"
    assert body["kind_label"] == "Inference endpoint"
    assert body["in_progress"] is False and body["ready_at"] and body["deleted_at"] is None
    assert body["spec"]["model_uri"] == INFERENCE_SPEC["model_uri"]
    assert body["cluster"]["state"] == "applied" and body["cluster"]["applied_version"] == 1
    assert {c["type"] for c in body["conditions"]} >= {"Ready", "PredictorReady"}
    assert body["details"]["url"] == f"https://chat.{tenant.namespace}.example.com"
    items = {item["label"]: item["value"] for item in body["connection"]["items"]}
    assert any("chat" in value for value in items.values())
    assert all(set(c) == {"label", "command"} for c in body["connection"]["commands"])
    assert isinstance(body["connection"]["notes"], list)


def test_a_pending_workload_has_an_empty_connection(as_user, tenant_member, chat):
    body = as_user(tenant_member).get(f"/api/v1/workloads/{chat.pk}/").json()

    assert body["connection"] == {"items": [], "commands": [], "notes": []}
    assert body["in_progress"] is True and body["cluster"]["state"] == "applying"


def test_the_list_filters_and_hides_deleted_workloads(
    as_user, tenant, tenant_member, other_tenant, fleet
):
    services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference", name="chat",
                             spec=INFERENCE_SPEC)
    dev = services.workload_launch(tenant=tenant, actor=tenant_member, kind="vcluster",
                                   name="dev", spec={})
    gone = services.workload_launch(tenant=tenant, actor=tenant_member, kind="vcluster",
                                    name="old", spec={})
    Workload.objects.filter(pk=gone.pk).update(status=WorkloadStatus.DELETED)
    Workload.objects.create(tenant=other_tenant, kind="vcluster", name="theirs")
    client = as_user(tenant_member)

    def names(query=""):
        response = client.get(f"/api/v1/workloads/{query}")
        assert response.status_code == 200, response.content[:300]
        return sorted(w["name"] for w in response.json()["results"])

    assert names() == ["chat", "dev"]
    assert names("?kind=vcluster") == ["dev"]
    assert names("?status=pending&tenant=acme") == ["chat", "dev"]
    assert names("?status=deleted") == ["old"]
    assert names("?tenant=globex") == []
    assert client.get("/api/v1/workloads/?page_size=1").json()["count"] == 2
    assert dev.pk in [w["id"] for w in client.get("/api/v1/workloads/").json()["results"]]


@pytest.mark.parametrize("query", ["status=sleeping", "kind=mainframe"])
def test_an_unknown_filter_value_is_a_400_field_error(as_user, tenant_member, tenant, query):
    response = as_user(tenant_member).get(f"/api/v1/workloads/?{query}")

    assert query.split("=")[0] in fields_of(response)


def test_the_timeline_is_paginated_newest_first(as_user, tenant_member, chat):
    services.workload_delete(workload_id=chat.pk, actor=tenant_member)

    response = as_user(tenant_member).get(f"/api/v1/workloads/{chat.pk}/events/?page_size=1")

    body = response.json()
    assert body["count"] == 2 and body["next"]
    (event,) = body["results"]
    assert (event["kind"], event["from_status"], event["to_status"], event["actor"]) == (
        "delete", "pending", "deleting", "member"
    )
    assert event["kind_label"] == "Deletion requested"


def test_a_non_numeric_or_absurd_id_is_a_json_404(as_user, tenant_member, chat):
    client = as_user(tenant_member)
    for path in ("abc/", "abc/events/", "1e3/scale/", f"{chat.pk}x/", f"{10**30}/",
                 f"{10**30}/kubeconfig/"):
        accept = "application/yaml" if "kubeconfig" in path else "application/json"
        response = client.get(f"/api/v1/workloads/{path}", HTTP_ACCEPT=accept)
        assert response.status_code == 404
        assert response["Content-Type"] == "application/json"  # errors are JSON, always
        assert response.json()["error"]["code"] == "not_found"


# --- query counts -----------------------------------------------------------------------------

# Session, user, roles and memberships, the data stamps, the count, the page, the page's open
# idle episodes. A transaction that wrote (each test's) counts every time; elsewhere a kept
# count spares that query (test_api_count.py).
LIST_QUERIES = 7
EVENTS_QUERIES = 6  # session, user, roles and memberships, the workload, count, page


def _grow(tenant, other_tenant, user, n: int) -> Workload:
    first = None
    for i in range(n):
        for owner in (tenant, other_tenant):
            workload = Workload.objects.create(
                tenant=owner, kind=("vcluster", "inference", "vm", "slurm")[i % 4],
                name=f"w{Workload.objects.count()}", launched_by=user, demand={"cpu": 2},
                observed={"connection": {"items": [["A", "b"]], "commands": [], "notes": []}},
            )
            WorkloadEvent.objects.create(workload=workload, kind="launched", actor=user)
            first = first or workload
    return first


@pytest.mark.parametrize("who", ["tenant_member", "platform_admin"])
def test_the_list_takes_the_same_queries_at_two_sizes(
    as_user, tenant, other_tenant, who, request, django_assert_num_queries
):
    user = request.getfixturevalue(who)
    client = as_user(user)
    _grow(tenant, other_tenant, user, 3)
    client.get("/api/v1/workloads/")  # warm the session and caches

    with django_assert_num_queries(LIST_QUERIES):
        few = client.get("/api/v1/workloads/").json()
    _grow(tenant, other_tenant, user, 30)
    with django_assert_num_queries(LIST_QUERIES):
        many = client.get("/api/v1/workloads/?page_size=100").json()

    assert len(many["results"]) > len(few["results"]) >= 3


def test_the_timeline_takes_the_same_queries_at_two_sizes(
    as_user, tenant, other_tenant, tenant_member, django_assert_num_queries
):
    workload = _grow(tenant, other_tenant, tenant_member, 1)
    client = as_user(tenant_member)
    url = f"/api/v1/workloads/{workload.pk}/events/"
    client.get(url)

    with django_assert_num_queries(EVENTS_QUERIES):
        client.get(url)
    for _ in range(20):
        WorkloadEvent.objects.create(workload=workload, kind="error", actor=tenant_member)
    with django_assert_num_queries(EVENTS_QUERIES):
        assert client.get(url).json()["count"] == 21


# --- scale, power, delete ---------------------------------------------------------------------


def test_scaling_is_accepted_and_admitted_against_quota(as_user, tenant_member, chat, fleet):
    client = as_user(tenant_member)

    response = client.post(f"/api/v1/workloads/{chat.pk}/scale/",
                           {"changes": {"max_replicas": 4}}, format="json")

    assert response.status_code == 202, response.content[:500]
    assert response.json()["spec"]["max_replicas"] == 4
    assert response.json()["demand"][H100] == 4
    assert AuditEvent.objects.filter(action="workload.scale", object_id=str(chat.pk)).exists()
    over = client.post(f"/api/v1/workloads/{chat.pk}/scale/", {"changes": {"max_replicas": 5}},
                       format="json")
    assert "quota" in fields_of(over)
    chat.refresh_from_db()
    assert chat.spec["max_replicas"] == 4


@pytest.mark.parametrize(
    ("changes", "field"),
    [({"max_replicas": 2}, "spec"),  # nothing changed
     ({"max_replicas": 0}, "spec.max_replicas"),
     ({"gpus_per_replica": 9}, "spec.gpus_per_replica"),
     ({"model_uri": "hf://a/b"}, "spec.model_uri"),
     ({}, "changes"),
     ("more", "changes"),
     ({"max_replicas": "x\x00"}, "changes")],
    ids=["unchanged", "zero", "too-many-gpus", "fixed-field", "empty", "not-object", "nul"],
)
def test_a_bad_scale_is_a_400_with_nothing_changed(
    as_user, tenant_member, chat, fleet, changes, field
):
    response = as_user(tenant_member).post(f"/api/v1/workloads/{chat.pk}/scale/",
                                           {"changes": changes}, format="json")

    assert field in fields_of(response)
    chat.refresh_from_db()
    assert chat.spec["max_replicas"] == 2 and chat.desired_version == 1
    assert writes(fleet) == []


@pytest.fixture
def notebook(fleet, tenant, tenant_member):
    return services.workload_launch(tenant=tenant, actor=tenant_member, kind="vm",
                                    name="notebook", spec=minimal_specs()["vm"])


def test_a_vm_stops_and_starts(as_user, tenant_member, notebook):
    client = as_user(tenant_member)

    stopped = client.post(f"/api/v1/workloads/{notebook.pk}/power/", {"action": "stop"},
                          format="json")

    assert stopped.status_code == 202, stopped.content[:500]
    assert stopped.json()["spec"]["running"] is False
    assert "cpu" not in stopped.json()["demand"]  # a stopped VM gives its vCPUs back
    again = client.post(f"/api/v1/workloads/{notebook.pk}/power/", {"action": "stop"},
                        format="json")
    assert again.status_code == 400 and again.json()["error"]["code"] == "rule"
    started = client.post(f"/api/v1/workloads/{notebook.pk}/power/", {"action": "start"},
                          format="json")
    assert started.status_code == 202 and started.json()["spec"]["running"] is True


def test_power_is_for_vms_and_notebooks_only(as_user, tenant_member, chat):
    response = as_user(tenant_member).post(f"/api/v1/workloads/{chat.pk}/power/",
                                           {"action": "stop"}, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "rule"
    assert "only VMs and notebooks do" in response.json()["error"]["message"]


def test_an_unknown_power_action_is_a_field_error(as_user, tenant_member, notebook):
    response = as_user(tenant_member).post(f"/api/v1/workloads/{notebook.pk}/power/",
                                           {"action": "hibernate"}, format="json")

    assert "action" in fields_of(response)


def test_delete_is_accepted_once_and_a_second_is_a_409(as_user, tenant_member, chat, fleet):
    client = as_user(tenant_member)

    first = client.delete(f"/api/v1/workloads/{chat.pk}/")

    assert first.status_code == 202, first.content[:500]
    assert first.json()["status"] == "deleting"
    second = client.delete(f"/api/v1/workloads/{chat.pk}/")
    assert second.status_code == 409
    assert second.json()["error"]["code"] == "invalid_transition"
    assert AuditEvent.objects.filter(action="workload.delete").count() == 1


# --- the kubeconfig ---------------------------------------------------------------------------


@pytest.fixture
def dev(fleet, tenant, tenant_member, django_capture_on_commit_callbacks):
    """A vCluster launched, applied on the emulator, and up (the test plays Flux and the chart:
    the HelmRelease Ready, the kubeconfig Secret written)."""
    with django_capture_on_commit_callbacks(execute=True):
        workload = services.workload_launch(tenant=tenant, actor=tenant_member, kind="vcluster",
                                            name="dev", spec={})
    release = vcluster.release_name("dev")
    stored = fleet.get_object(*HELM_RELEASE, release, tenant.namespace)
    fleet.patch_object(*HELM_RELEASE, release, tenant.namespace, patch={"status": {
        "observedGeneration": stored["metadata"].get("generation", 1),
        "conditions": [{"type": "Ready", "status": "True", "reason": "InstallSucceeded",
                        "message": "Helm install succeeded",
                        "lastTransitionTime": "2026-11-30T10:02:41Z"}],
        "history": [{"status": "deployed", "version": 1, "chartVersion": vcluster.CHART_VERSION,
                     "chartName": "vcluster", "name": release, "namespace": tenant.namespace,
                     "digest": "sha256:1f0c", "configDigest": "sha256:9ab2",
                     "firstDeployed": "2026-11-30T10:02:41Z",
                     "lastDeployed": "2026-11-30T10:02:41Z"}],
    }})
    fleet.put_object({
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": vcluster.kubeconfig_secret_name(release),
                     "namespace": tenant.namespace},
        "data": {vcluster.KUBECONFIG_KEY: base64.b64encode(KUBECONFIG.encode()).decode()},
    })
    assert services.workload_observe(workload_id=workload.pk) == "ready"
    return workload


def test_a_ready_vcluster_gives_its_kubeconfig_as_yaml_and_it_is_audited(
    as_user, tenant_member, dev
):
    response = as_user(tenant_member).get(f"/api/v1/workloads/{dev.pk}/kubeconfig/")

    assert response.status_code == 200, response.content[:500]
    assert response["Content-Type"] == "application/yaml; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="vcluster-dev.yaml"'
    assert response["Cache-Control"] == "no-store"
    assert response.content.decode() == KUBECONFIG
    download = AuditEvent.objects.get(action="workload.kubeconfig_download")
    assert download.object_id == str(dev.pk) and download.actor == tenant_member


def test_a_read_token_gets_no_kubeconfig_a_workloads_token_does(tenant_member, dev):
    # The kubeconfig is the vCluster's admin credential: a read-only token must not get it.
    def download(scope: str):
        raw = api_token_create(user=tenant_member, name=f"only-{scope}", scopes=[scope]).raw
        return APIClient().get(f"/api/v1/workloads/{dev.pk}/kubeconfig/",
                               HTTP_AUTHORIZATION=f"Bearer {raw}")

    refused = download("read")

    assert refused.status_code == 403
    assert refused.json()["error"] == {
        "status": 403, "code": "missing_scope",
        "message": 'This token lacks the "workloads" scope.',
    }
    assert KUBECONFIG.encode() not in refused.content
    assert not AuditEvent.objects.filter(action="workload.kubeconfig_download").exists()
    allowed = download("workloads")
    assert allowed.status_code == 200, allowed.content[:500]
    assert allowed.content.decode() == KUBECONFIG


def test_an_unreachable_cluster_is_a_503_and_nothing_is_audited(
    as_user, tenant, tenant_member, dev, kube_emulator
):
    secret = vcluster.kubeconfig_secret_name(vcluster.release_name("dev"))
    kube_emulator.fail(500, method="GET",
                       path=f"/api/v1/namespaces/{tenant.namespace}/secrets/{secret}")

    response = as_user(tenant_member).get(f"/api/v1/workloads/{dev.pk}/kubeconfig/")

    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == "unavailable"
    assert not AuditEvent.objects.filter(action="workload.kubeconfig_download").exists()


def test_a_kubeconfig_only_comes_from_a_ready_vcluster(as_user, tenant, tenant_member, chat,
                                                       fleet):
    client = as_user(tenant_member)
    not_vcluster = client.get(f"/api/v1/workloads/{chat.pk}/kubeconfig/")
    pending = services.workload_launch(tenant=tenant, actor=tenant_member, kind="vcluster",
                                       name="dev", spec={})
    not_ready = client.get(f"/api/v1/workloads/{pending.pk}/kubeconfig/")

    for response in (not_vcluster, not_ready):
        assert response.status_code == 400
        assert response["Content-Type"] == "application/json"
        assert response.json()["error"]["code"] == "rule"
    assert not AuditEvent.objects.filter(action="workload.kubeconfig_download").exists()


# --- who may do what --------------------------------------------------------------------------


def _every_write(client, workload) -> dict[str, object]:
    base = f"/api/v1/workloads/{workload.pk}"
    return {
        "launch": launch(client, kind="vcluster", name="another", spec={}),
        "check": client.post("/api/v1/workloads/check/",
                             {"tenant": "acme", "kind": "vcluster", "spec": {}}, format="json"),
        "scale": client.post(f"{base}/scale/", {"changes": {"max_replicas": 3}}, format="json"),
        "power": client.post(f"{base}/power/", {"action": "stop"}, format="json"),
        "delete": client.delete(f"{base}/"),
        "kubeconfig": client.get(f"{base}/kubeconfig/"),
    }


def _every_read(client, workload) -> dict[str, object]:
    base = f"/api/v1/workloads/{workload.pk}"
    return {
        "detail": client.get(f"{base}/"),
        "events": client.get(f"{base}/events/"),
    }


def _snapshot(workload) -> tuple:
    workload.refresh_from_db()
    return (workload.status, workload.spec, workload.demand, workload.desired_version,
            workload.events.count(), Workload.objects.count(), AuditEvent.objects.count())


@pytest.mark.parametrize("who", ["tenant_viewer", "finance"])
def test_viewers_and_finance_read_but_every_write_is_a_403(as_user, request, who, chat, fleet):
    client = as_user(request.getfixturevalue(who))
    before = _snapshot(chat)

    reads = _every_read(client, chat)
    listed = client.get("/api/v1/workloads/").json()
    refused = _every_write(client, chat)

    assert {name: r.status_code for name, r in reads.items()} == {"detail": 200, "events": 200}
    assert [w["id"] for w in listed["results"]] == [chat.pk]
    assert {name: r.status_code for name, r in refused.items()} == dict.fromkeys(refused, 403)
    assert all(r.json()["error"]["code"] == "permission_denied" for r in refused.values())
    assert _snapshot(chat) == before
    assert writes(fleet) == []


def test_an_outsider_gets_a_404_everywhere_and_nothing_changes(
    as_user, other_tenant_member, chat, fleet
):
    client = as_user(other_tenant_member)
    before = _snapshot(chat)

    answers = {**_every_read(client, chat), **_every_write(client, chat)}

    assert {name: r.status_code for name, r in answers.items()} == dict.fromkeys(answers, 404)
    assert all(r.json()["error"]["code"] == "not_found" for r in answers.values())
    assert client.get("/api/v1/workloads/").json()["results"] == []
    assert client.get("/api/v1/workloads/?tenant=acme").json()["results"] == []
    assert _snapshot(chat) == before
    assert writes(fleet) == []


def test_a_platform_admin_acts_on_any_tenant(as_user, platform_admin, chat, fleet):
    client = as_user(platform_admin)

    launched = launch(client, kind="vcluster", name="ops", spec={})
    scaled = client.post(f"/api/v1/workloads/{chat.pk}/scale/", {"changes": {"max_replicas": 3}},
                         format="json")
    deleted = client.delete(f"/api/v1/workloads/{chat.pk}/")

    assert (launched.status_code, scaled.status_code, deleted.status_code) == (202, 202, 202)
    assert launched.json()["launched_by"] == "platform-admin"


def test_an_owner_may_do_what_a_member_may(as_user, tenant_owner, chat):
    response = as_user(tenant_owner).delete(f"/api/v1/workloads/{chat.pk}/")

    assert response.status_code == 202


def test_a_member_of_a_suspended_tenant_no_longer_sees_its_workloads(as_user, tenant, chat):
    member = MembershipFactory(tenant=tenant, role=Membership.Role.MEMBER,
                               user=UserFactory(username="leaver")).user
    tenant.status = tenant.Status.SUSPENDED
    tenant.save(update_fields=["status"])

    response = as_user(member).get(f"/api/v1/workloads/{chat.pk}/")

    assert response.status_code == 404


def test_an_unknown_tenant_is_a_404_for_launch_and_check(as_user, tenant_member, fleet):
    TenantFactory(slug="initech")  # exists, but the member is not in it
    client = as_user(tenant_member)

    for tenant in ("no-such-tenant", "initech"):
        assert launch(client, tenant=tenant).status_code == 404
        check = client.post("/api/v1/workloads/check/",
                            {"tenant": tenant, "kind": "vcluster", "spec": {}}, format="json")
        assert check.status_code == 404
    assert not Workload.objects.exists()
    assert json.loads(launch(client, tenant="a\x00").content)["error"]["fields"]["tenant"]


# --- the schema -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def _content(operation: dict, status: str) -> dict:
    return operation["responses"][status]["content"]


def test_the_launch_is_documented_with_an_example_of_each_kind_and_its_202(schema):
    operation = schema["paths"]["/api/v1/workloads/"]["post"]
    examples = operation["requestBody"]["content"]["application/json"]["examples"]

    assert {e["value"]["kind"] for e in examples.values()} == {"vcluster", "inference", "vm",
                                                               "slurm", "notebook"}
    assert set(operation["responses"]) & {"200", "201", "202"} == {"202"}
    assert _content(operation, "202")["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Workload"
    }
    assert "Location" in operation["responses"]["202"]["headers"]
    body = schema["components"]["schemas"]["WorkloadLaunchRequest"]["properties"]
    assert body["spec"] == {
        "type": "object", "additionalProperties": {}, "description": body["spec"]["description"]
    }


@pytest.mark.parametrize(("path", "method"), [
    ("/api/v1/workloads/{id}/", "delete"),
    ("/api/v1/workloads/{id}/scale/", "post"),
    ("/api/v1/workloads/{id}/power/", "post"),
])
def test_every_change_is_documented_as_accepted(schema, path, method):
    operation = schema["paths"][path][method]

    assert set(operation["responses"]) & {"200", "201", "202", "204"} == {"202"}
    assert "409" in operation["responses"]


def test_the_kubeconfig_is_documented_as_a_yaml_file_with_its_503(schema):
    operation = schema["paths"]["/api/v1/workloads/{id}/kubeconfig/"]["get"]

    assert _content(operation, "200") == {
        "application/yaml": {"schema": {"type": "string", "format": "binary"}}
    }
    error = {"schema": {"$ref": "#/components/schemas/Error"}}
    assert _content(operation, "503") == {"application/json": error}
    assert _content(operation, "400") == {"application/json": error}


def test_workload_enums_have_names_of_their_own(schema):
    components = schema["components"]["schemas"]

    assert components["WorkloadStatusEnum"]["enum"] == list(WorkloadStatus.values)
    assert set(components["WorkloadKindEnum"]["enum"]) == {"vcluster", "inference", "vm", "slurm",
                                                           "notebook"}
    assert "launched" in components["WorkloadEventKindEnum"]["enum"]
    assert components["WorkloadPowerActionEnum"]["enum"] == ["start", "stop", "restart"]
    assert components["WorkloadScaleRequest"]["properties"]["changes"]["type"] == "object"


@pytest.mark.django_db
def test_the_check_says_when_a_name_is_taken(tenant, tenant_member, gpu_pool, workload_quota,
                                             simulated_gateway, api_client):
    workload_quota()
    services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                      name="chat", spec=INFERENCE_SPEC)
    api_client.force_authenticate(tenant_member)
    answer = api_client.post("/api/v1/workloads/check/", {
        "tenant": tenant.slug, "kind": "inference", "name": "chat", "spec": INFERENCE_SPEC,
    }, format="json")
    assert answer.status_code == 400
    assert "taken" in " ".join(answer.json()["error"]["fields"]["name"])
