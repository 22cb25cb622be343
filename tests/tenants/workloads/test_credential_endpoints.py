"""Inference endpoints that load a gated or private model with one of the tenant's model
credentials: the spec's field and its checks, the InferenceService that points at the Secret,
the simulated KServe that refuses a gated model without a token and loads it with one, the
launch form's choice and a change of credential on a running endpoint."""

import dataclasses

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from tenants.credentials import services as credentials
from tenants.workloads import services
from tenants.workloads.advice import failure_advice
from tenants.workloads.kinds import inference, schemas
from tenants.workloads.kinds.base import SpecError
from tenants.workloads.models import WorkloadStatus

from .conftest import INFERENCE_SPEC
from .test_kind_inference import SHARED, SHARED_BUILD

S = WorkloadStatus
KIND = inference.KIND
GATED = "hf://meta-llama/Llama-3.2-3B-Instruct"
PRIVATE = "s3://private-models/llama/step-1000"
TOKEN = "hf_SuperSecretTokenValue1234567890abc"
WITH_CREDENTIALS = dataclasses.replace(SHARED, credentials={"hf-token": "huggingface",
                                                            "bucket": "s3"})


def clean(**fields):
    return KIND.validate({"gpu": "gpu:nvidia-h100-80gb", **fields}, WITH_CREDENTIALS)


# --- the kind ----------------------------------------------------------------------------------


def test_a_gated_model_picks_a_token_and_its_predictor_runs_as_the_credentials_account():
    spec = clean(model_uri=GATED, credential="hf-token")
    assert spec["credential"] == "hf-token"
    (manifest,) = KIND.manifests(spec, SHARED_BUILD)
    predictor = manifest["spec"]["predictor"]
    assert predictor["serviceAccountName"] == "model-cred-hf-token"
    assert predictor["model"]["env"] == [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {
        "name": "model-cred-hf-token", "key": "HF_TOKEN"}}}]
    assert schemas.manifest_errors(manifest) == []
    assert ("Model credential", "hf-token") in KIND.serves(spec)


def test_a_private_bucket_picks_s3_keys_through_the_account_alone():
    (manifest,) = KIND.manifests(clean(model_uri=PRIVATE, credential="bucket"), SHARED_BUILD)
    predictor = manifest["spec"]["predictor"]
    assert predictor["serviceAccountName"] == "model-cred-bucket"
    assert "env" not in predictor["model"]
    assert schemas.manifest_errors(manifest) == []


def test_no_credential_changes_nothing_in_the_inference_service():
    spec = clean(model_uri=GATED, credential="")
    assert "credential" not in spec
    (manifest,) = KIND.manifests(spec, SHARED_BUILD)
    assert "serviceAccountName" not in manifest["spec"]["predictor"]


@pytest.mark.parametrize(("uri", "credential", "message"), [
    (GATED, "nope", "No credential of this name in the tenant (it has bucket, hf-token)."),
    (GATED, "bucket", "A hf:// model needs a Hugging Face token; bucket is an S3 access key."),
    (PRIVATE, "hf-token", "A s3:// model needs an S3 access key; hf-token is a Hugging Face"),
    ("pvc://models/llama", "hf-token", "A pvc:// model needs no credential: leave it empty."),
    (GATED, 7, "The name of one of the tenant's model credentials."),
])
def test_a_credential_that_does_not_fit_is_a_field_error(uri, credential, message):
    with pytest.raises(SpecError) as refused:
        clean(model_uri=uri, credential=credential)
    assert message in " ".join(refused.value.fields["credential"])


def test_the_credential_may_change_on_a_running_endpoint():
    spec = clean(model_uri=GATED)
    assert KIND.scale(spec, {"credential": "hf-token"}, WITH_CREDENTIALS)["credential"] == (
        "hf-token")


# --- on the simulated fleet ----------------------------------------------------------------------


@pytest.fixture
def fleet(settings, tenant, gpu_pool, workload_quota, fleet_clock):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    workload_quota()
    return fleet_clock


def run(workload, fleet) -> None:
    services.workload_reconcile(workload_id=workload.pk)
    fleet.advance(20)
    services.workload_observe(workload_id=workload.pk)
    services.workload_observe(workload_id=workload.pk)
    workload.refresh_from_db()


@pytest.mark.django_db
def test_a_gated_model_fails_without_a_token_in_hugging_faces_words(fleet, tenant, tenant_member):
    workload = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                        name="gated", spec={**INFERENCE_SPEC, "model_uri": GATED})
    run(workload, fleet)
    assert workload.status == S.FAILED
    assert "Cannot access gated repo" in workload.status_message
    assert "meta-llama/Llama-3.2-3B-Instruct" in workload.status_message
    advice, action = failure_advice(kind="inference", reason=workload.status_reason,
                                    message=workload.status_message, scalable=True)
    assert "Credentials page" in advice and action == "relaunch"


@pytest.mark.django_db
@pytest.mark.parametrize(("uri", "kind", "values"), [
    (GATED, "huggingface", {"token": TOKEN}),
    (PRIVATE, "s3", {"access_key_id": "AKIAEXAMPLE", "secret_access_key": "s" * 40}),
])
def test_the_model_loads_with_the_stored_credential(
    fleet, tenant, tenant_member, django_capture_on_commit_callbacks, uri, kind, values
):
    with django_capture_on_commit_callbacks(execute=True):
        credentials.credential_create(actor=tenant_member, tenant=tenant, name="cred",
                                      kind=kind, values=values)
    workload = services.workload_launch(
        tenant=tenant, actor=tenant_member, kind="inference", name="loads",
        spec={**INFERENCE_SPEC, "model_uri": uri, "credential": "cred"})
    run(workload, fleet)
    assert workload.status == S.READY, workload.status_message


@pytest.mark.django_db
def test_a_private_bucket_without_keys_fails_in_botocores_words(fleet, tenant, tenant_member):
    workload = services.workload_launch(
        tenant=tenant, actor=tenant_member, kind="inference", name="private",
        spec={**INFERENCE_SPEC, "model_uri": PRIVATE})
    run(workload, fleet)
    assert workload.status == S.FAILED
    assert "Unable to locate credentials" in workload.status_message


@pytest.mark.django_db
def test_a_failed_endpoint_given_a_token_later_redeploys_and_loads(
    fleet, tenant, tenant_member, django_capture_on_commit_callbacks
):
    workload = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                        name="gated", spec={**INFERENCE_SPEC, "model_uri": GATED})
    run(workload, fleet)
    assert workload.status == S.FAILED
    with django_capture_on_commit_callbacks(execute=True):
        credentials.credential_create(actor=tenant_member, tenant=tenant, name="hf-token",
                                      kind="huggingface", values={"token": TOKEN})
    services.workload_scale(workload_id=workload.pk, actor=tenant_member,
                            changes={"credential": "hf-token"})
    run(workload, fleet)
    assert workload.status == S.READY, workload.status_message


@pytest.mark.django_db
def test_a_running_endpoint_switches_credential_by_a_scale(
    fleet, tenant, tenant_member, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        for name in ("old-token", "new-token"):
            credentials.credential_create(actor=tenant_member, tenant=tenant, name=name,
                                          kind="huggingface", values={"token": TOKEN})
    workload = services.workload_launch(
        tenant=tenant, actor=tenant_member, kind="inference", name="chat",
        spec={**INFERENCE_SPEC, "model_uri": GATED, "credential": "old-token"})
    run(workload, fleet)
    assert workload.status == S.READY
    services.workload_scale(workload_id=workload.pk, actor=tenant_member,
                            changes={"credential": "new-token"})
    workload.refresh_from_db()
    assert workload.spec["credential"] == "new-token"
    run(workload, fleet)
    assert workload.status == S.READY
    with pytest.raises(ValidationError):  # still used by the endpoint
        credentials.credential_delete(actor=tenant_member,
                                      credential=tenant.model_credentials.get(name="new-token"))
    credentials.credential_delete(actor=tenant_member,
                                  credential=tenant.model_credentials.get(name="old-token"))


# --- the launch form ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_launch_form_offers_the_credentials_of_the_models_kind(
    tenant, tenant_member, gpu_pool, workload_quota, login
):
    workload_quota()
    url = reverse("tenants:workload-launch", args=["acme", "inference"])
    client = login(tenant_member)
    empty = client.get(url).content.decode()
    assert 'id="credential-empty"' in empty
    assert reverse("tenants:credential-list", args=["acme"]) in empty
    credentials.credential_create(actor=tenant_member, tenant=tenant, name="hf-token",
                                  kind="huggingface", values={"token": TOKEN})
    credentials.credential_create(actor=tenant_member, tenant=tenant, name="bucket", kind="s3",
                                  values={"access_key_id": "AKIA1", "secret_access_key": "s" * 9})
    check = reverse("tenants:workload-launch-check", args=["acme", "inference"])
    form = client.post(check, {"name": "chat", "model_uri": GATED}).content.decode()
    assert 'value="hf-token"' in form and 'value="bucket"' not in form
    assert 'id="credential-empty"' not in form
    form = client.post(check, {"name": "chat", "model_uri": "pvc://claim/x"}).content.decode()
    assert 'value="hf-token"' not in form and 'id="credential-empty"' not in form
    form = client.post(check, {"name": "chat", "model_uri": "s3://private-x/y"}).content.decode()
    assert 'value="bucket"' in form and 'value="hf-token"' not in form


# --- the API -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_api_launches_with_a_credential_and_names_a_wrong_one(
    tenant, tenant_member, gpu_pool, workload_quota, api_client
):
    workload_quota()
    credentials.credential_create(actor=tenant_member, tenant=tenant, name="bucket", kind="s3",
                                  values={"access_key_id": "AKIA1", "secret_access_key": "s" * 9})
    credentials.credential_create(actor=tenant_member, tenant=tenant, name="hf-token",
                                  kind="huggingface", values={"token": TOKEN})
    api_client.force_login(tenant_member)

    def launch(credential):
        return api_client.post("/api/v1/workloads/", {
            "tenant": "acme", "kind": "inference", "name": "chat",
            "spec": {"model_uri": GATED, "gpu": "gpu:nvidia-h100-80gb",
                     "credential": credential}}, format="json")

    refused = launch("bucket")
    assert refused.status_code == 400
    assert "needs a Hugging Face token" in str(refused.json()["error"]["fields"])
    accepted = launch("hf-token")
    assert accepted.status_code == 202, accepted.content[:300]
    assert accepted.json()["spec"]["credential"] == "hf-token"
    assert TOKEN not in accepted.content.decode()
