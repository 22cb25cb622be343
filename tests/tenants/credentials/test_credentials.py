"""Model credentials: stored sealed, write-only to everyone, audited without their values,
managed by the tenant's owners and members, synced as Secrets KServe reads, and never in a
response, a page or a log line."""

import base64
import json
import logging
import threading
import time

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from django.urls import reverse

from core.fleet import TransientFleetError
from core.models import AuditEvent
from core.sealed import open_sealed
from tenants.credentials import services
from tenants.credentials.manifests import credential_manifests
from tenants.credentials.models import ModelCredential
from tenants.workloads.models import Workload, WorkloadStatus
from tests.support.manifest_schemas import schema_errors

TOKEN = "hf_SuperSecretTokenValue1234567890abc"
ACCESS_KEY = "AKIAEXAMPLEKEYID0001"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
NS = "tenant-acme"
SECRETS = "/api/v1/namespaces/tenant-acme/secrets"


def hf(tenant, actor, name="hf-token", token=TOKEN):
    return services.credential_create(actor=actor, tenant=tenant, name=name,
                                      kind="huggingface", values={"token": token})


def s3(tenant, actor, name="models-bucket", **settings):
    return services.credential_create(
        actor=actor, tenant=tenant, name=name, kind="s3",
        values={"access_key_id": ACCESS_KEY, "secret_access_key": SECRET_KEY}, **settings)


def assert_no_value(text: str) -> None:
    for value in (TOKEN, ACCESS_KEY, SECRET_KEY):
        assert value not in text
        assert base64.b64encode(value.encode()).decode() not in text


# --- model and services -----------------------------------------------------------------------


def test_the_values_are_sealed_at_rest_never_in_clear(tenant, tenant_member):
    credential = s3(tenant, tenant_member)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM tenants_modelcredential WHERE id = %s", [credential.pk])
        row = " ".join(str(column) for column in cursor.fetchone())
    assert_no_value(row)
    assert json.loads(open_sealed(credential.sealed_values)) == {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}


def test_create_replace_and_delete_are_audited_without_the_values(tenant, tenant_owner):
    credential = hf(tenant, tenant_owner)
    services.credential_replace(actor=tenant_owner, credential=credential,
                                values={"token": TOKEN[::-1]})
    services.credential_delete(actor=tenant_owner, credential=credential)

    events = AuditEvent.objects.filter(action__startswith="model_credential.")
    assert list(events.order_by("id").values_list("action", flat=True)) == [
        "model_credential.create", "model_credential.replace", "model_credential.delete"]
    for event in events:
        assert event.tenant_slug == "acme" and event.changes["name"] == "hf-token"
        assert_no_value(json.dumps(event.changes))
        assert TOKEN[::-1] not in json.dumps(event.changes)
    assert not ModelCredential.objects.exists()


def test_a_replaced_credential_keeps_its_name_and_opens_to_the_new_value(tenant, tenant_member):
    credential = hf(tenant, tenant_member)
    replaced = services.credential_replace(actor=tenant_member, credential=credential,
                                           values={"token": "hf_" + "n" * 30})
    assert replaced.replaced_by == tenant_member and replaced.replaced_at is not None
    assert json.loads(open_sealed(replaced.sealed_values)) == {"HF_TOKEN": "hf_" + "n" * 30}
    assert replaced.desired_version == credential.desired_version + 1


@pytest.mark.parametrize(("name", "kind", "values", "field"), [
    ("Bad_Name", "huggingface", {"token": TOKEN}, "name"),
    ("ok", "huggingface", {}, "token"),
    ("ok", "huggingface", {"token": "short"}, "token"),
    ("ok", "huggingface", {"token": "hf_with space inside"}, "token"),
    ("ok", "s3", {"access_key_id": ACCESS_KEY}, "secret_access_key"),
    ("ok", "gcs", {"token": TOKEN}, "kind"),
])
def test_bad_input_is_a_field_error_that_never_repeats_the_value(
    tenant, tenant_member, name, kind, values, field
):
    with pytest.raises(ValidationError) as refused:
        services.credential_create(actor=tenant_member, tenant=tenant, name=name, kind=kind,
                                   values=values)
    assert field in refused.value.message_dict
    for value in values.values():
        assert value not in str(refused.value.message_dict)


def test_a_name_is_unique_per_tenant_only(tenant, other_tenant, tenant_member, platform_admin):
    hf(tenant, tenant_member)
    with pytest.raises(ValidationError) as refused:
        hf(tenant, tenant_member)
    assert "name" in refused.value.message_dict
    hf(other_tenant, platform_admin)  # another tenant may use the same name


def test_an_s3_endpoint_url_sets_https_from_its_scheme(tenant, tenant_member):
    credential = s3(tenant, tenant_member, s3_endpoint="http://minio.storage:9000/",
                    s3_region="eu-central-1")
    assert (credential.s3_endpoint, credential.s3_use_https) == ("minio.storage:9000", False)
    with pytest.raises(ValidationError) as refused:
        s3(tenant, tenant_member, name="other", s3_endpoint="minio storage")
    assert "s3_endpoint" in refused.value.message_dict


def test_viewers_finance_and_outsiders_may_not_manage_credentials(
    tenant, tenant_viewer, finance, other_tenant_member, tenant_owner
):
    for who in (tenant_viewer, finance, other_tenant_member):
        with pytest.raises(PermissionDenied):
            hf(tenant, who)
    credential = hf(tenant, tenant_owner)
    for who in (tenant_viewer, finance, other_tenant_member):
        with pytest.raises(PermissionDenied):
            services.credential_replace(actor=who, credential=credential, values={"token": TOKEN})
        with pytest.raises(PermissionDenied):
            services.credential_delete(actor=who, credential=credential)
    assert ModelCredential.objects.get().sealed_values == credential.sealed_values


def test_deleting_a_credential_an_endpoint_uses_is_refused_with_its_name(tenant, tenant_member):
    credential = hf(tenant, tenant_member)
    Workload.objects.create(tenant=tenant, kind="inference", name="chat",
                    spec={"model_uri": "hf://meta-llama/Llama-3.2-3B-Instruct",
                          "credential": "hf-token"}, status=WorkloadStatus.READY)
    with pytest.raises(ValidationError) as refused:
        services.credential_delete(actor=tenant_member, credential=credential)
    assert "Used by chat" in str(refused.value)
    Workload.objects.update(status=WorkloadStatus.DELETED)
    services.credential_delete(actor=tenant_member, credential=credential)
    assert not ModelCredential.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_delete_waits_for_a_launch_that_holds_the_tenant_and_then_sees_its_endpoint(
        tenant, tenant_member):
    """A launch checks its credential is still there under the tenant's lock; a delete takes
    that lock before it looks for users. So a delete racing a launch that has the lock waits,
    then finds the endpoint the launch committed, and refuses."""
    from django.db import transaction

    from tenants.access.models import Tenant

    assert connection.vendor == "postgresql"
    credential = hf(tenant, tenant_member)
    locked, outcome = threading.Event(), []

    def launch() -> None:
        try:
            with transaction.atomic():
                Tenant.objects.select_for_update().get(pk=tenant.pk)
                locked.set()
                time.sleep(0.5)  # the delete, meanwhile, must be waiting for the lock
                Workload.objects.create(tenant=tenant, kind="inference", name="chat",
                                        spec={"model_uri": "hf://meta-llama/Llama-3.2-3B",
                                              "credential": "hf-token"})
        finally:
            connection.close()

    def delete() -> None:
        locked.wait(timeout=10)
        try:
            services.credential_delete(actor=tenant_member, credential=credential)
            outcome.append("deleted")
        except ValidationError as exc:
            outcome.append(str(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=launch), threading.Thread(target=delete)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert len(outcome) == 1 and "Used by chat" in outcome[0]
    assert ModelCredential.objects.filter(pk=credential.pk).exists()


# --- the Secret on the cluster ----------------------------------------------------------------


def test_the_secrets_reach_the_namespace_in_kserves_shape_and_valid(
    tenant, tenant_member, kube_gateway, kube_emulator, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        hf(tenant, tenant_member)
        s3(tenant, tenant_member, s3_endpoint="minio.storage:9000", s3_region="eu-central-1",
           s3_use_https=False)

    token = kube_emulator.get_object("v1", "Secret", "model-cred-hf-token", NS)
    assert base64.b64decode(token["data"]["HF_TOKEN"]).decode() == TOKEN
    keys = kube_emulator.get_object("v1", "Secret", "model-cred-models-bucket", NS)
    assert base64.b64decode(keys["data"]["AWS_SECRET_ACCESS_KEY"]).decode() == SECRET_KEY
    assert keys["metadata"]["annotations"] == {
        "serving.kserve.io/s3-endpoint": "minio.storage:9000",
        "serving.kserve.io/s3-region": "eu-central-1",
        "serving.kserve.io/s3-usehttps": "0",
    }
    account = kube_emulator.get_object("v1", "ServiceAccount", "model-cred-models-bucket", NS)
    assert account["secrets"] == [{"name": "model-cred-models-bucket"}]
    credential = ModelCredential.objects.get(name="hf-token")
    assert credential.in_sync and credential.applied_at is not None
    # What the portal keeps of the apply holds no value.
    assert_no_value(json.dumps(credential.applied_manifests))


def test_the_built_manifests_validate_against_kubernetes_schemas(tenant, tenant_member):
    from tenants.credentials.services import _spec

    for credential in (hf(tenant, tenant_member), s3(tenant, tenant_member, s3_region="x1")):
        values = json.loads(open_sealed(credential.sealed_values))
        for manifest in credential_manifests(_spec(credential, tenant, values)):
            assert schema_errors(manifest) == [], manifest["kind"]


def test_a_deleted_credentials_secret_is_pruned_and_others_are_left(
    tenant, tenant_member, kube_gateway, kube_emulator, django_capture_on_commit_callbacks
):
    kube_emulator.put_object({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                              "metadata": {"name": "not-ours", "namespace": NS}, "data": {}})
    with django_capture_on_commit_callbacks(execute=True):
        credential = hf(tenant, tenant_member)
    with django_capture_on_commit_callbacks(execute=True):
        services.credential_delete(actor=tenant_member, credential=credential)

    names = {o["metadata"]["name"] for o in kube_emulator.list_objects("v1", "Secret")}
    assert names == {"not-ours"}
    assert not kube_emulator.list_objects("v1", "ServiceAccount")


def test_a_cluster_failure_is_recorded_scrubbed_shown_and_retried(
    tenant, tenant_member, kube_gateway, kube_emulator, login, api_client, caplog,
    django_capture_on_commit_callbacks,
):
    # An API server that (unusually) echoes the value back in its error.
    kube_emulator.fail(503, method="PATCH", path=f"{SECRETS}/model-cred-hf-token",
                       message=f"etcdserver: request timed out writing {TOKEN}")
    caplog.set_level(logging.DEBUG)
    with pytest.raises(TransientFleetError) as raised:
        hf(tenant, tenant_member)
        services.credentials_reconcile(tenant_id=tenant.pk)
    assert TOKEN not in str(raised.value)

    credential = ModelCredential.objects.get()
    assert "etcdserver: request timed out" in credential.reconcile_error
    assert "[redacted]" in credential.reconcile_error
    page = login(tenant_member).get(reverse("tenants:credential-list", args=["acme"]))
    text = page.content.decode()
    assert "Secret not applied yet" in text and "etcdserver" in text
    assert_no_value(text)
    event = AuditEvent.objects.get(action="model_credential.apply_failed")
    assert_no_value(json.dumps(event.changes))

    with django_capture_on_commit_callbacks(execute=True):
        services.credentials_reconcile_sweep()
    credential.refresh_from_db()
    assert credential.in_sync and credential.reconcile_failures == 0
    assert_no_value(caplog.text)


def test_no_log_line_holds_a_value_through_create_reconcile_and_api(
    tenant, tenant_member, kube_gateway, api_client, caplog, django_capture_on_commit_callbacks
):
    caplog.set_level(logging.DEBUG)
    api_client.force_login(tenant_member)
    with django_capture_on_commit_callbacks(execute=True):
        answer = api_client.post("/api/v1/tenants/acme/model-credentials/",
                                 {"name": "hf-token", "kind": "huggingface", "token": TOKEN},
                                 format="json")
    assert answer.status_code == 201
    assert ModelCredential.objects.get().in_sync
    assert caplog.records  # the reconcile and the client did log
    assert_no_value(caplog.text)


# --- API ---------------------------------------------------------------------------------------


def test_the_api_is_write_only_in_every_answer(tenant, tenant_member, api_client):
    api_client.force_login(tenant_member)
    base = "/api/v1/tenants/acme/model-credentials/"
    answers = [
        api_client.post(base, {"name": "hf-token", "kind": "huggingface", "token": TOKEN},
                        format="json"),
        api_client.post(base, {"name": "hf-token", "kind": "huggingface", "token": TOKEN},
                        format="json"),  # 400: the name is taken
        api_client.post(base, {"name": "x", "kind": "huggingface", "token": TOKEN + " x"},
                        format="json"),  # 400: a space
        api_client.post(base, {"name": "k", "kind": "s3", "access_key_id": ACCESS_KEY},
                        format="json"),  # 400: no secret key
        api_client.get(base),
        api_client.get(base + "hf-token/"),
        api_client.put(base + "hf-token/", {"token": SECRET_KEY}, format="json"),
    ]
    assert [a.status_code for a in answers] == [201, 400, 400, 400, 200, 200, 200]
    for answer in answers:
        assert_no_value(answer.content.decode())
    created = answers[0].json()
    assert created["name"] == "hf-token" and created["kind"] == "huggingface"
    assert "token" not in created and created["used_by"] == []
    assert answers[1].json()["error"]["fields"]["name"]
    assert answers[3].json()["error"]["fields"]["secret_access_key"] == ["Required."]
    assert api_client.delete(base + "hf-token/").status_code == 204


def test_the_api_scopes_credentials_to_the_tenant(
    tenant, other_tenant, tenant_owner, tenant_viewer, other_tenant_member, api_client
):
    hf(tenant, tenant_owner)
    base = "/api/v1/tenants/acme/model-credentials/"
    api_client.force_login(other_tenant_member)
    assert api_client.get(base).status_code == 404
    assert api_client.get(base + "hf-token/").status_code == 404
    assert api_client.delete(base + "hf-token/").status_code == 404
    api_client.force_login(tenant_viewer)
    listed = api_client.get(base).json()["results"]
    assert [(c["name"], c["kind"]) for c in listed] == [("hf-token", "huggingface")]
    assert api_client.delete(base + "hf-token/").status_code == 403
    assert api_client.put(base + "hf-token/", {"token": TOKEN}, format="json").status_code == 403
    assert ModelCredential.objects.count() == 1


# --- pages -------------------------------------------------------------------------------------


def test_the_page_adds_lists_and_never_renders_a_value(tenant, tenant_member, login):
    client = login(tenant_member)
    url = reverse("tenants:credential-list", args=["acme"])
    empty = client.get(url).content.decode()
    assert 'id="credentials-empty"' in empty and 'id="tab-credentials"' in empty

    refused = client.post(url, {"name": "hf-token", "kind": "huggingface",
                                "token": TOKEN + " with a space"})
    assert refused.status_code == 200
    assert_no_value(refused.content.decode())

    added = client.post(url, {"name": "hf-token", "kind": "huggingface", "token": TOKEN},
                        follow=True)
    text = added.content.decode()
    assert "hf-token is stored" in text and 'id="credential-hf-token"' in text
    assert_no_value(text)
    replace = client.get(reverse("tenants:credential-detail", args=["acme", "hf-token"]))
    assert replace.status_code == 200
    assert_no_value(replace.content.decode())


def test_viewers_see_names_and_kinds_without_forms_and_outsiders_get_404(
    tenant, tenant_owner, tenant_viewer, other_tenant_member, login
):
    hf(tenant, tenant_owner)
    page = login(tenant_viewer).get(reverse("tenants:credential-list", args=["acme"]))
    text = page.content.decode()
    assert "hf-token" in text and "Hugging Face token" in text
    assert 'id="add-credential"' not in text and "Replace values" not in text
    assert login(tenant_viewer).get(
        reverse("tenants:credential-detail", args=["acme", "hf-token"])).status_code == 403
    outsider = login(other_tenant_member)
    assert outsider.get(reverse("tenants:credential-list", args=["acme"])).status_code == 404
    assert outsider.post(reverse("tenants:credential-delete", args=["acme", "hf-token"]),
                         {"confirm": "hf-token"}).status_code == 404
    assert ModelCredential.objects.count() == 1


def test_delete_asks_first_and_refuses_while_in_use(tenant, tenant_member, login):
    hf(tenant, tenant_member)
    Workload.objects.create(tenant=tenant, kind="inference", name="chat",
                    spec={"model_uri": "hf://google/gemma-2-9b-it", "credential": "hf-token"})
    client = login(tenant_member)
    url = reverse("tenants:credential-delete", args=["acme", "hf-token"])
    asked = client.post(url)
    assert "Delete the credential hf-token?" in asked.content.decode()
    refused = client.post(url, {"confirm": "hf-token"}, follow=True).content.decode()
    assert "Used by chat" in refused
    assert ModelCredential.objects.count() == 1


def test_the_page_reads_a_fixed_number_of_queries(
    tenant, tenant_member, login, django_assert_max_num_queries
):
    client = login(tenant_member)
    url = reverse("tenants:credential-list", args=["acme"])
    for count in (1, 6):
        for index in range(count):
            hf(tenant, tenant_member, name=f"token-{count}-{index}")
        with django_assert_max_num_queries(12):
            assert client.get(url).status_code == 200


def test_a_key_rotation_reseals_every_credential_with_the_new_key(
    tenant, tenant_member, settings
):
    from io import StringIO

    from cryptography.fernet import Fernet
    from django.core.management import call_command

    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.SEALING_KEYS = [old]
    hf(tenant, tenant_member)
    settings.SEALING_KEYS = [new, old]
    out = StringIO()
    call_command("reseal_model_credentials", stdout=out)
    assert "1 model credentials resealed" in out.getvalue()
    settings.SEALING_KEYS = [new]  # the old key dropped: the value still opens
    assert json.loads(open_sealed(ModelCredential.objects.get().sealed_values)) == {
        "HF_TOKEN": TOKEN}
    assert AuditEvent.objects.get(action="model_credential.resealed").changes == {
        "credentials": 1}
