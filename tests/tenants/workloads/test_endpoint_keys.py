"""API keys of inference endpoints: the objects that publish an endpoint through the fleet's
gateway, the keys' lifecycle (hash kept, key sealed until its Secret exists, revoked keys'
Secrets deleted, a rotated key working on until its grace ends), who may manage them, the API,
the audit, and the simulated fleet's gateway that checks them."""

import base64
import hashlib
import json
import logging
from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.errors import RuleViolation
from core.fleet import TransientFleetError
from core.models import AuditEvent
from core.sealed import open_sealed
from tenants.workloads import services
from tenants.workloads.endpoint_keys import EndpointKey, endpoint_keys_of
from tenants.workloads.kinds.base import BuildContext, Exposure
from tenants.workloads.kinds.inference import KIND, exposure
from tenants.workloads.kinds.schemas import check_manifests, manifest_errors
from tenants.workloads.models import Workload, WorkloadStatus
from tenants.workloads.services import endpoint_keys

from .conftest import INFERENCE_SPEC, ready_inference_service

DOMAIN = "endpoints.example.com"
SECURITY_POLICIES = "/apis/gateway.envoyproxy.io/v1alpha1/namespaces/tenant-acme/securitypolicies"


def _ctx(**exposure_fields) -> BuildContext:
    return BuildContext(
        workload_id=7, name="chat", kind="inference", tenant_slug="acme",
        namespace="tenant-acme", isolation="shared",
        exposure=Exposure(gateway_namespace="envoy-gateway-system", gateway_name="ai-factory",
                          listener="https", domain=DOMAIN, **exposure_fields),
    )


# --- the objects --------------------------------------------------------------------------


def test_an_exposed_endpoint_gets_its_key_policy_before_its_route_and_both_are_schema_valid():
    ctx = _ctx(credentials=("chat-key-1", "chat-key-2"))
    built = KIND.manifests(INFERENCE_SPEC | {"cpu": 4, "memory_gib": 32}, ctx)
    assert [m["kind"] for m in built] == ["InferenceService", "SecurityPolicy", "HTTPRoute"]
    check_manifests(built)
    policy, route = built[1:]
    assert route["spec"]["hostnames"] == [f"chat-acme.{DOMAIN}"]
    assert route["spec"]["parentRefs"] == [{
        "group": "gateway.networking.k8s.io", "kind": "Gateway",
        "namespace": "envoy-gateway-system", "name": "ai-factory", "sectionName": "https"}]
    assert route["spec"]["rules"][0]["backendRefs"] == [
        {"kind": "Service", "name": "chat-predictor", "port": 80}]
    assert policy["spec"]["targetRefs"] == [
        {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "chat"}]
    auth = policy["spec"]["apiKeyAuth"]
    assert [ref["name"] for ref in auth["credentialRefs"]] == ["chat-key-1", "chat-key-2"]
    assert auth["extractFrom"] == [{"headers": ["Authorization", "x-api-key"]}]
    assert auth["sanitize"] is True
    # Both carry the owner labels: pruned and deleted with the endpoint.
    assert all(m["metadata"]["labels"]["portal.ai-factory.io/workload-id"] == "7"
               for m in built)


def test_a_policy_with_a_wrong_extraction_is_refused_by_the_vendored_schema():
    policy = exposure.manifests(_ctx())[0]
    policy["spec"]["apiKeyAuth"]["extractFrom"] = []
    assert any("extractFrom" in error for error in manifest_errors(policy))


def test_an_endpoint_not_exposed_is_its_inference_service_alone():
    ctx = BuildContext(workload_id=7, name="chat", kind="inference", tenant_slug="acme",
                       namespace="tenant-acme", isolation="shared")
    assert [m["kind"] for m in KIND.manifests(INFERENCE_SPEC | {"cpu": 4, "memory_gib": 32},
                                              ctx)] == ["InferenceService"]


def test_a_long_name_still_makes_one_dns_label_under_the_domain():
    ctx = BuildContext(workload_id=7, name="a" * 60, kind="inference", tenant_slug="b" * 40,
                       namespace="tenant-b", isolation="shared", exposure=_ctx().exposure)
    label, _, domain = exposure.hostname(ctx).partition(".")
    assert domain == DOMAIN and len(label) <= 63 and label.replace("-", "").isalnum()


def test_a_keys_secret_holds_the_bare_key_under_its_client_id():
    secret = exposure.key_secret(_ctx(), 12, "afk_secret")
    assert secret["metadata"]["name"] == "chat-key-12"
    assert secret["type"] == "Opaque"
    assert base64.b64decode(secret["data"]["key-12"]) == b"afk_secret"


def test_the_examples_hold_a_placeholder_until_a_key_is_put_in():
    commands = dict(exposure.examples("https://chat-acme.x/v1", "chat"))
    python = commands["Chat completion (OpenAI Python client)"]
    assert 'base_url="https://chat-acme.x/v1"' in python and 'model="chat"' in python
    assert "$ENDPOINT_KEY" in commands["Chat completion (curl)"]
    assert 'api_key="afk_x"' in exposure.with_key(python, "afk_x")
    assert "Bearer afk_x" in exposure.with_key(commands["Chat completion (curl)"], "afk_x")


# --- the lifecycle, through the emulated cluster -------------------------------------------


@pytest.fixture
def exposed(settings):
    settings.INFERENCE_DOMAIN = DOMAIN
    settings.INFERENCE_GATEWAY = "envoy-gateway-system/ai-factory"


@pytest.fixture
def endpoint(exposed, tenant, tenant_member, gpu_pool, workload_quota):
    workload_quota()
    return services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                    name="chat", spec=INFERENCE_SPEC)


@pytest.fixture
def delivered(endpoint, tenant_member, kube_gateway):
    """A key of the endpoint, its Secret on the (emulated) cluster."""
    services.workload_reconcile(workload_id=endpoint.pk)
    key = endpoint_keys.endpoint_key_create(workload_id=endpoint.pk, actor=tenant_member,
                                            name="chat-app").key
    services.workload_reconcile(workload_id=endpoint.pk)
    return key


def _expire_now(key: EndpointKey) -> None:
    """Its grace ran out a moment ago (as if its hours had passed)."""
    EndpointKey.objects.filter(pk=key.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1))


def _policy_refs(kube_emulator, tenant):
    policy = kube_emulator.get_object("gateway.envoyproxy.io/v1alpha1", "SecurityPolicy",
                                      "chat-api-keys", tenant.namespace)
    return [ref["name"] for ref in policy["spec"]["apiKeyAuth"]["credentialRefs"]]


def _rotated(endpoint, key: EndpointKey, actor, *, grace_hours: int) -> EndpointKey:
    """The key that replaced `key`."""
    return endpoint_keys.endpoint_key_rotate(workload_id=endpoint.pk, key_id=key.pk, actor=actor,
                                             grace_hours=grace_hours).key


def _only_on_the_gateway(kube_emulator, tenant, *, kept: EndpointKey, gone: EndpointKey):
    """The policy names `kept` alone, and `gone`'s Secret is deleted (and recorded so)."""
    assert _policy_refs(kube_emulator, tenant) == [kept.secret_name]
    assert kube_emulator.get_object("v1", "Secret", gone.secret_name, tenant.namespace) is None
    gone.refresh_from_db()
    assert gone.removed_at is not None


@pytest.mark.django_db
def test_a_key_is_kept_hashed_sealed_until_its_secret_exists_then_only_hashed(
    endpoint, tenant, tenant_member, kube_gateway, kube_emulator, caplog
):
    caplog.set_level(logging.DEBUG)
    services.workload_reconcile(workload_id=endpoint.pk)
    assert _policy_refs(kube_emulator, tenant) == []  # no key yet: every request refused

    issued = endpoint_keys.endpoint_key_create(workload_id=endpoint.pk, actor=tenant_member,
                                               name="chat-app")
    key = EndpointKey.objects.get()
    assert key.digest == hashlib.sha256(issued.raw.encode()).hexdigest()
    assert issued.raw.startswith("afk_") and key.hint == issued.raw[:8]
    assert open_sealed(key.sealed) == issued.raw and issued.raw not in key.sealed

    # The cluster fails the Secret's creation: the key stays recorded and sealed, for a retry.
    secrets_path = f"/api/v1/namespaces/{tenant.namespace}/secrets"
    kube_emulator.fail(503, method="POST", path=secrets_path)
    with pytest.raises(TransientFleetError):
        services.workload_reconcile(workload_id=endpoint.pk)
    key.refresh_from_db()
    assert key.sealed and key.delivered_at is None

    services.workload_reconcile(workload_id=endpoint.pk)
    secret = kube_emulator.get_object("v1", "Secret", key.secret_name, tenant.namespace)
    assert base64.b64decode(secret["data"][f"key-{key.pk}"]).decode() == issued.raw
    assert _policy_refs(kube_emulator, tenant) == [key.secret_name]
    key.refresh_from_db()
    assert key.sealed == "" and key.delivered_at is not None
    # The applied objects the portal keeps say which Secrets, never what is in them.
    assert issued.raw not in json.dumps(Workload.objects.get().applied_manifests)
    # Nor does any log line, the failed try's included.
    assert caplog.records and issued.raw not in caplog.text


@pytest.mark.django_db
def test_revoking_drops_the_key_from_the_policy_and_deletes_its_secret(
    endpoint, tenant, tenant_member, kube_gateway, kube_emulator
):
    services.workload_reconcile(workload_id=endpoint.pk)
    kept = endpoint_keys.endpoint_key_create(workload_id=endpoint.pk, actor=tenant_member,
                                             name="kept").key
    gone = endpoint_keys.endpoint_key_create(workload_id=endpoint.pk, actor=tenant_member,
                                             name="gone").key
    services.workload_reconcile(workload_id=endpoint.pk)
    assert sorted(_policy_refs(kube_emulator, tenant)) == sorted(
        [kept.secret_name, gone.secret_name])

    endpoint_keys.endpoint_key_revoke(workload_id=endpoint.pk, key_id=gone.pk,
                                      actor=tenant_member)
    services.workload_reconcile(workload_id=endpoint.pk)
    _only_on_the_gateway(kube_emulator, tenant, kept=kept, gone=gone)
    assert kube_emulator.get_object("v1", "Secret", kept.secret_name, tenant.namespace)
    with pytest.raises(RuleViolation):
        endpoint_keys.endpoint_key_revoke(workload_id=endpoint.pk, key_id=gone.pk,
                                          actor=tenant_member)


@pytest.mark.django_db
def test_a_rotated_key_stays_on_the_gateway_until_the_sweep_finds_its_grace_over(
    endpoint, delivered, tenant, tenant_member, kube_emulator
):
    old = delivered
    new = _rotated(endpoint, old, tenant_member, grace_hours=24)
    services.workload_reconcile(workload_id=endpoint.pk)
    assert sorted(_policy_refs(kube_emulator, tenant)) == sorted(
        [old.secret_name, new.secret_name])
    # Nothing is due while the grace runs.
    assert services.workloads_reconcile_sweep() == []

    _expire_now(old)
    # Nothing else changes: the sweep finds the key, and queues its endpoint.
    assert services.workloads_reconcile_sweep() == [endpoint.pk]
    old.refresh_from_db()
    assert old.revoked_at == old.expires_at and old.revoked_by is None
    services.workload_reconcile(workload_id=endpoint.pk)
    _only_on_the_gateway(kube_emulator, tenant, kept=new, gone=old)
    # Recorded once: the next sweep has nothing to do.
    assert services.workloads_reconcile_sweep() == []
    assert AuditEvent.objects.filter(action="endpoint_key.expire").count() == 1


@pytest.mark.django_db
def test_any_reconcile_drops_a_key_past_its_grace_before_the_sweep_records_it(
    endpoint, delivered, tenant, tenant_member, kube_emulator
):
    old = delivered
    new = _rotated(endpoint, old, tenant_member, grace_hours=1)
    _expire_now(old)
    services.workload_reconcile(workload_id=endpoint.pk)  # the rotation's own reconcile
    _only_on_the_gateway(kube_emulator, tenant, kept=new, gone=old)
    assert old.revoked_at == old.expires_at
    expiry = AuditEvent.objects.get(action="endpoint_key.expire")
    assert expiry.actor is None and expiry.object_id == str(old.pk)
    assert services.workloads_reconcile_sweep() == []


@pytest.mark.django_db
def test_a_key_in_its_grace_can_still_be_revoked_at_once(
    endpoint, delivered, tenant, tenant_member, kube_emulator
):
    old = delivered
    new = _rotated(endpoint, old, tenant_member, grace_hours=168)
    with pytest.raises(RuleViolation, match="already replaced"):
        endpoint_keys.endpoint_key_rotate(workload_id=endpoint.pk, key_id=old.pk,
                                          actor=tenant_member)
    endpoint_keys.endpoint_key_revoke(workload_id=endpoint.pk, key_id=old.pk,
                                      actor=tenant_member)
    services.workload_reconcile(workload_id=endpoint.pk)
    _only_on_the_gateway(kube_emulator, tenant, kept=new, gone=old)
    assert old.revoked_by == tenant_member and old.revoked_at < old.expires_at
    assert not old.expired  # revoked by hand, before its grace ended
    _expire_now(old)
    assert services.workloads_reconcile_sweep() == []
    assert not AuditEvent.objects.filter(action="endpoint_key.expire").exists()


@pytest.mark.django_db
def test_a_key_whose_secret_vanished_shows_as_needing_rotation_and_rotating_replaces_it(
    endpoint, delivered, tenant, tenant_member, kube_emulator
):
    key = delivered
    ready_inference_service(kube_emulator, name="chat", namespace=tenant.namespace)
    services.workload_observe(workload_id=endpoint.pk)
    endpoint.refresh_from_db()
    assert [k.needs_rotation for k in endpoint_keys_of(workload=endpoint)] == [False]

    kube_emulator.delete_object("v1", "Secret", key.secret_name, tenant.namespace)
    services.workload_observe(workload_id=endpoint.pk)
    endpoint.refresh_from_db()
    assert [k.needs_rotation for k in endpoint_keys_of(workload=endpoint)] == [True]

    # The default grace would keep its missing Secret in the policy, which refuses every key:
    # it is revoked at once instead.
    issued = endpoint_keys.endpoint_key_rotate(workload_id=endpoint.pk, key_id=key.pk,
                                               actor=tenant_member)
    services.workload_reconcile(workload_id=endpoint.pk)
    assert issued.key.name == "chat-app" and issued.key.pk != key.pk
    assert _policy_refs(kube_emulator, tenant) == [issued.key.secret_name]
    key.refresh_from_db()
    assert key.revoked_at is not None and key.expires_at is None
    assert AuditEvent.objects.get(action="endpoint_key.rotate").changes["grace_hours"] == 0


@pytest.mark.django_db
def test_deleting_the_endpoint_deletes_its_keys_secrets(
    endpoint, delivered, tenant, tenant_member, kube_emulator
):
    key = delivered
    services.workload_delete(workload_id=endpoint.pk, actor=tenant_member)
    services.workload_reconcile(workload_id=endpoint.pk)
    services.workload_reconcile(workload_id=endpoint.pk)
    assert kube_emulator.get_object("v1", "Secret", key.secret_name, tenant.namespace) is None
    assert kube_emulator.list_objects("gateway.networking.k8s.io/v1", "HTTPRoute") == []
    assert Workload.objects.get().status == WorkloadStatus.DELETED


@pytest.mark.django_db
def test_keys_are_audited_without_the_key(endpoint, tenant_member):
    issued = endpoint_keys.endpoint_key_create(workload_id=endpoint.pk, actor=tenant_member,
                                               name="chat-app")
    rotated = endpoint_keys.endpoint_key_rotate(workload_id=endpoint.pk, key_id=issued.key.pk,
                                                actor=tenant_member)
    endpoint_keys.endpoint_key_revoke(workload_id=endpoint.pk, key_id=rotated.key.pk,
                                      actor=tenant_member)
    _expire_now(issued.key)
    services.workloads_reconcile_sweep()
    events = AuditEvent.objects.filter(action__startswith="endpoint_key.").order_by("pk")
    assert [e.action for e in events] == [
        "endpoint_key.create", "endpoint_key.rotate", "endpoint_key.revoke",
        "endpoint_key.expire"]
    assert all(e.tenant_slug == "acme" for e in events)
    stored = json.dumps([e.changes for e in events])
    assert issued.raw not in stored and rotated.raw not in stored
    rotation, expiry = events[1], events[3]
    old = EndpointKey.objects.get(pk=issued.key.pk)
    assert rotation.changes["grace_hours"] == 24 and rotation.actor == tenant_member
    assert rotation.changes["replaced"] == issued.key.hint
    assert rotation.changes["hint"] == rotated.key.hint
    assert expiry.actor is None and expiry.object_id == str(old.pk)
    assert expiry.changes["expires_at"] == old.expires_at.isoformat()


@pytest.mark.django_db
def test_viewers_cannot_manage_keys_and_nothing_changes(endpoint, tenant_viewer, tenant_member):
    key = endpoint_keys.endpoint_key_create(workload_id=endpoint.pk, actor=tenant_member,
                                            name="chat-app").key
    for attempt in (
        lambda: endpoint_keys.endpoint_key_create(workload_id=endpoint.pk, actor=tenant_viewer,
                                                  name="mine"),
        lambda: endpoint_keys.endpoint_key_revoke(workload_id=endpoint.pk, key_id=key.pk,
                                                  actor=tenant_viewer),
        lambda: endpoint_keys.endpoint_key_rotate(workload_id=endpoint.pk, key_id=key.pk,
                                                  actor=tenant_viewer),
    ):
        with pytest.raises(PermissionDenied):
            attempt()
    assert list(EndpointKey.objects.values_list("name", "revoked_at")) == [("chat-app", None)]


@pytest.mark.django_db
def test_two_active_keys_cannot_share_a_name(endpoint, tenant_member):
    endpoint_keys.endpoint_key_create(workload_id=endpoint.pk, actor=tenant_member, name="ci")
    with pytest.raises(Exception, match="already has an active key"):
        endpoint_keys.endpoint_key_create(workload_id=endpoint.pk, actor=tenant_member,
                                          name="ci")


# --- the API --------------------------------------------------------------------------------


def _keys_url(workload_id: int, *rest) -> str:
    return "/".join([f"/api/v1/workloads/{workload_id}/keys", *map(str, rest), ""])


@pytest.mark.django_db
def test_the_api_shows_a_key_once_and_never_again(endpoint, api_client, tenant_member):
    api_client.force_authenticate(tenant_member)
    created = api_client.post(_keys_url(endpoint.pk), {"name": "chat-app"}, format="json")
    assert created.status_code == 201, created.content
    raw = created.json()["key"]
    assert created.json()["state"] == "pending" and raw.startswith(created.json()["hint"])
    assert created["Cache-Control"] == "no-store"
    key_id = created.json()["id"]

    listed = api_client.get(_keys_url(endpoint.pk))
    one = api_client.get(_keys_url(endpoint.pk, key_id))
    revoked = api_client.delete(_keys_url(endpoint.pk, key_id))
    assert (listed.status_code, one.status_code, revoked.status_code) == (200, 200, 200)
    assert revoked.json()["state"] == "revoked"
    for answer in (listed, one, revoked):
        assert raw not in answer.content.decode() and "key" not in answer.json()[0 if isinstance(
            answer.json(), list) else "name"]
    again = api_client.delete(_keys_url(endpoint.pk, key_id))
    assert again.status_code == 400


@pytest.mark.django_db
def test_the_api_rotates_a_key_the_old_one_working_for_24_hours_unless_told(
    endpoint, api_client, tenant_member
):
    api_client.force_authenticate(tenant_member)
    first = api_client.post(_keys_url(endpoint.pk), {"name": "chat-app"}, format="json").json()
    before = timezone.now()
    rotated = api_client.post(_keys_url(endpoint.pk, first["id"], "rotate"))
    assert rotated.status_code == 201
    assert rotated.json()["name"] == "chat-app" and rotated.json()["key"] != first["key"]
    listed = api_client.get(_keys_url(endpoint.pk)).json()
    # The new key first, the old one beside it.
    assert [k["id"] for k in listed] == [rotated.json()["id"], first["id"]]
    old = listed[1]
    assert (old["state"], old["replaced_by"], old["revoked_at"]) == (
        "pending", rotated.json()["id"], None)
    expires_at = EndpointKey.objects.get(pk=first["id"]).expires_at
    assert before + timedelta(hours=24) <= expires_at <= timezone.now() + timedelta(hours=24)
    assert old["expires_at"] == expires_at.isoformat().replace("+00:00", "Z")

    # Rotated already: only a revoke (at once) is left for it.
    again = api_client.post(_keys_url(endpoint.pk, first["id"], "rotate"))
    assert again.status_code == 400 and "already replaced" in again.json()["error"]["message"]
    assert api_client.delete(_keys_url(endpoint.pk, first["id"])).json()["state"] == "revoked"

    now = api_client.post(_keys_url(endpoint.pk, rotated.json()["id"], "rotate"),
                          {"grace_hours": 0}, format="json")
    assert now.status_code == 201
    one = api_client.get(_keys_url(endpoint.pk, rotated.json()["id"])).json()
    assert (one["state"], one["expires_at"], one["replaced_by"]) == (
        "revoked", None, now.json()["id"])


@pytest.mark.django_db
@pytest.mark.parametrize("grace", [2, -1, 25, "soon", "24h", None, True, 1.5, [24], {"h": 1}])
def test_the_api_refuses_a_grace_it_does_not_offer_and_nothing_changes(
    grace, endpoint, api_client, tenant_member
):
    api_client.force_authenticate(tenant_member)
    key = api_client.post(_keys_url(endpoint.pk), {"name": "chat-app"}, format="json").json()
    answer = api_client.post(_keys_url(endpoint.pk, key["id"], "rotate"), {"grace_hours": grace},
                             format="json")
    assert answer.status_code == 400, answer.content
    assert "grace_hours" in answer.json()["error"]["fields"]
    assert list(EndpointKey.objects.values_list("pk", "revoked_at", "expires_at")) == [
        (key["id"], None, None)]
    assert not AuditEvent.objects.filter(action="endpoint_key.rotate").exists()


@pytest.mark.django_db
def test_the_service_refuses_a_grace_it_does_not_offer(endpoint, tenant_member):
    key = endpoint_keys.endpoint_key_create(workload_id=endpoint.pk, actor=tenant_member,
                                            name="chat-app").key
    with pytest.raises(ValidationError):
        endpoint_keys.endpoint_key_rotate(workload_id=endpoint.pk, key_id=key.pk,
                                          actor=tenant_member, grace_hours=48)
    assert EndpointKey.objects.get().expires_at is None


@pytest.mark.django_db
def test_the_api_refuses_viewers_writes_and_hides_other_tenants_endpoints(
    endpoint, api_client, tenant_member, tenant_viewer, other_tenant_member
):
    api_client.force_authenticate(tenant_member)
    key_id = api_client.post(_keys_url(endpoint.pk), {"name": "a"}, format="json").json()["id"]

    api_client.force_authenticate(tenant_viewer)
    assert api_client.get(_keys_url(endpoint.pk)).status_code == 200
    assert api_client.post(_keys_url(endpoint.pk), {"name": "b"}, format="json").status_code == 403
    assert api_client.delete(_keys_url(endpoint.pk, key_id)).status_code == 403
    assert api_client.post(_keys_url(endpoint.pk, key_id, "rotate")).status_code == 403

    api_client.force_authenticate(other_tenant_member)
    for answer in (api_client.get(_keys_url(endpoint.pk)),
                   api_client.get(_keys_url(endpoint.pk, key_id)),
                   api_client.post(_keys_url(endpoint.pk), {"name": "c"}, format="json"),
                   api_client.delete(_keys_url(endpoint.pk, key_id))):
        assert answer.status_code == 404
    assert list(EndpointKey.objects.values_list("name", "revoked_at")) == [("a", None)]


# --- the page -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_page_shows_a_new_key_once_and_then_only_its_first_characters(
    endpoint, client, tenant_member
):
    client.force_login(tenant_member)
    page = f"/t/acme/workloads/{endpoint.pk}/"
    created = client.post(f"{page}keys/", {"name": "chat-app"})
    assert created.status_code == 200 and "no-store" in created["Cache-Control"]
    key = EndpointKey.objects.get()
    raw = created.context["issued"].raw
    assert raw in created.content.decode()
    later = client.get(page).content.decode()
    assert raw not in later and f"{key.hint}…" in later


@pytest.mark.django_db
def test_a_viewer_sees_the_keys_but_no_form_and_cannot_post(endpoint, client, tenant_member,
                                                           tenant_viewer):
    endpoint_keys.endpoint_key_create(workload_id=endpoint.pk, actor=tenant_member,
                                      name="chat-app")
    client.force_login(tenant_viewer)
    page = f"/t/acme/workloads/{endpoint.pk}/"
    html = client.get(page).content.decode()
    assert "chat-app" in html and 'id="create-key"' not in html
    assert client.post(f"{page}keys/", {"name": "mine"}).status_code == 403
    assert EndpointKey.objects.count() == 1


# --- the simulated fleet's gateway ----------------------------------------------------------


@pytest.mark.django_db
def test_the_simulated_gateway_wants_a_valid_key_and_answers_as_vllm(
    exposed, tenant, tenant_member, gpu_pool, workload_quota, fleet_clock, client, settings
):
    settings.FLEET_SIMULATED_READY_SECONDS = 1
    workload_quota()
    workload = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                        name="chat", spec=INFERENCE_SPEC)
    services.workload_reconcile(workload_id=workload.pk)
    issued = endpoint_keys.endpoint_key_create(workload_id=workload.pk, actor=tenant_member,
                                               name="chat-app")
    services.workload_reconcile(workload_id=workload.pk)
    fleet_clock.advance(5)
    services.workload_observe(workload_id=workload.pk)
    services.workload_observe(workload_id=workload.pk)
    workload.refresh_from_db()
    assert workload.status == WorkloadStatus.READY
    url = dict(workload.connection["items"])["OpenAI API base URL"]
    assert url.endswith(f"/simulated-gateway/chat-acme.{DOMAIN}/v1")
    base = url.removeprefix(settings.PORTAL_URL)

    refused = client.get(f"{base}/models")
    assert refused.status_code == 401
    assert refused.json()["error"]["message"] == "Client authentication failed."
    assert client.get(f"{base}/models", HTTP_AUTHORIZATION="Bearer afk_wrong").status_code == 401

    models = client.get(f"{base}/models", HTTP_AUTHORIZATION=f"Bearer {issued.raw}")
    assert models.status_code == 200 and models.json()["data"][0]["id"] == "chat"
    chat = client.post(f"{base}/chat/completions", data=json.dumps(
        {"model": "chat", "messages": [{"role": "user", "content": "hi"}]}),
        content_type="application/json", HTTP_X_API_KEY=issued.raw)
    assert chat.status_code == 200 and "chat" in chat.json()["choices"][0]["message"]["content"]
    assert EndpointKey.objects.get().last_used_at is not None

    endpoint_keys.endpoint_key_revoke(workload_id=workload.pk, key_id=issued.key.pk,
                                      actor=tenant_member)
    services.workload_reconcile(workload_id=workload.pk)
    assert client.get(f"{base}/models",
                      HTTP_AUTHORIZATION=f"Bearer {issued.raw}").status_code == 401
    assert client.get(f"/simulated-gateway/nope.{DOMAIN}/v1/models").status_code == 404


@pytest.fixture
def answering(exposed, tenant, tenant_member, gpu_pool, workload_quota, fleet_clock, settings):
    """A ready endpoint on the simulated fleet, its gateway's `/models` asked with a key."""
    settings.FLEET_SIMULATED_READY_SECONDS = 1
    workload_quota()
    workload = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                        name="chat", spec=INFERENCE_SPEC)
    services.workload_reconcile(workload_id=workload.pk)
    fleet_clock.advance(5)
    services.workload_observe(workload_id=workload.pk)
    services.workload_observe(workload_id=workload.pk)
    workload.refresh_from_db()
    base = dict(workload.connection["items"])["OpenAI API base URL"].removeprefix(
        settings.PORTAL_URL)

    def status(client, raw: str) -> int:
        return client.get(f"{base}/models", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code

    return workload, status


@pytest.mark.django_db
@pytest.mark.parametrize("grace", [0, 24])
def test_the_simulated_gateway_takes_the_old_key_through_its_grace_only(
    grace, answering, tenant_member, client
):
    workload, status = answering
    old = endpoint_keys.endpoint_key_create(workload_id=workload.pk, actor=tenant_member,
                                            name="chat-app")
    services.workload_reconcile(workload_id=workload.pk)
    assert status(client, old.raw) == 200

    new = endpoint_keys.endpoint_key_rotate(workload_id=workload.pk, key_id=old.key.pk,
                                            actor=tenant_member, grace_hours=grace)
    services.workload_reconcile(workload_id=workload.pk)
    assert status(client, new.raw) == 200
    assert status(client, old.raw) == (401 if grace == 0 else 200)

    _expire_now(old.key)
    for workload_id in services.workloads_reconcile_sweep():
        services.workload_reconcile(workload_id=workload_id)
    assert (status(client, old.raw), status(client, new.raw)) == (401, 200)


@pytest.mark.django_db
@pytest.mark.parametrize("where", ["page", "api"])
def test_the_keys_take_the_same_queries_for_two_as_for_twelve(
    where, endpoint, client, api_client, tenant_member
):
    client.force_login(tenant_member)
    api_client.force_authenticate(tenant_member)
    get = (lambda: client.get(f"/t/acme/workloads/{endpoint.pk}/")) if where == "page" else (
        lambda: api_client.get(_keys_url(endpoint.pk)))

    def queries() -> int:
        get()  # the page's first look at the workload is asked for here
        with CaptureQueriesContext(connection) as captured:
            assert get().status_code == 200
        return len(captured)

    for name in ("a", "b"):
        endpoint_keys.endpoint_key_create(workload_id=endpoint.pk, actor=tenant_member, name=name)
    few = queries()
    for index in range(10):
        endpoint_keys.endpoint_key_create(workload_id=endpoint.pk, actor=tenant_member,
                                          name=f"k{index}")
    assert queries() == few


@pytest.mark.django_db
def test_an_endpoint_not_published_says_its_keys_wait_for_the_gateway(
    settings, endpoint, client, tenant_member
):
    client.force_login(tenant_member)
    page = f"/t/acme/workloads/{endpoint.pk}/"
    assert 'id="not-published"' not in client.get(page).content.decode()
    settings.INFERENCE_DOMAIN = ""
    assert 'id="not-published"' in client.get(page).content.decode()


@pytest.mark.django_db
def test_rotating_on_the_page_asks_first_then_shows_the_new_key_once(
    endpoint, client, tenant_member
):
    key = endpoint_keys.endpoint_key_create(workload_id=endpoint.pk, actor=tenant_member,
                                            name="chat-app").key
    client.force_login(tenant_member)
    url = f"/t/acme/workloads/{endpoint.pk}/keys/{key.pk}/rotate/"
    asked = client.post(url)
    assert 'id="confirm-page"' in asked.content.decode() and EndpointKey.objects.count() == 1
    # It asks how long the old key keeps working: 24 hours unless told.
    assert '<option value="24" selected>for 24 hours</option>' in asked.content.decode()
    assert '<option value="0">no longer: revoke it now</option>' in asked.content.decode()
    rotated = client.post(url, {"confirm": "chat-app", "grace_hours": "1"})
    new = EndpointKey.objects.get(expires_at__isnull=True)
    assert rotated.status_code == 200 and new.pk != key.pk
    assert rotated.context["issued"].raw in rotated.content.decode()

    # The old key: working for an hour more, beside the new one, still revocable (not rotatable).
    html = client.get(f"/t/acme/workloads/{endpoint.pk}/").content.decode()
    old_row = html[html.index(f'id="key-{key.pk}"'):]
    old_row = old_row[:old_row.index("</tr>")]
    assert 'data-key-state="expiring"' in old_row and "expires in 59" in old_row
    assert f"replaced by <code>{new.hint}…</code>" in old_row
    assert f'id="revoke-{key.pk}"' in old_row and f'id="rotate-{key.pk}"' not in old_row
    assert html.index(f'id="key-{new.pk}"') < html.index(f'id="key-{key.pk}"')

    _expire_now(key)
    html = client.get(f"/t/acme/workloads/{endpoint.pk}/").content.decode()
    assert f'id="key-{key.pk}" data-key-state="expired"' in html


@pytest.mark.django_db
def test_a_grace_the_page_does_not_offer_changes_nothing(endpoint, client, tenant_member):
    key = endpoint_keys.endpoint_key_create(workload_id=endpoint.pk, actor=tenant_member,
                                            name="chat-app").key
    client.force_login(tenant_member)
    answer = client.post(f"/t/acme/workloads/{endpoint.pk}/keys/{key.pk}/rotate/",
                         {"confirm": "chat-app", "grace_hours": "48"}, follow=True)
    assert answer.status_code == 200 and "Pick how long" in answer.content.decode()
    assert list(EndpointKey.objects.values_list("pk", "expires_at")) == [(key.pk, None)]
