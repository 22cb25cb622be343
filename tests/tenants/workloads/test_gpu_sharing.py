"""GPU sharing by trust, through the machinery: what the launch context offers, admission of
MIG and HAMi shares against the right quotas, the HAMi endpoint on the cluster, and the trust
rule on every path a dedicated tenant could take to a partition or to shared nodes (the launch
page, the service, the kind, a tenant made dedicated after a launch)."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from tenants.models import Tenant
from tenants.workloads import services
from tenants.workloads.models import Workload, WorkloadStatus
from tenants.workloads.selectors import launch_context, tenant_demand_in_use
from tests.factories import GPUFactory, NodeFactory, QuotaFactory, hami_gpu_node

from .conftest import INFERENCE_SPEC

ISVC = ("serving.kserve.io/v1beta1", "InferenceService")
HAMI = "hami:nvidia-l40s"
MEMORY, CORES = "hami:nvidia-l40s:memory-gib", "hami:nvidia-l40s:cores"
MIG = "mig:nvidia-a100-80gb:1g.10gb"
SHARE = {"model_uri": "hf://Qwen/Qwen2.5-7B-Instruct", "gpu": HAMI, "gpu_memory_gib": 20,
         "gpu_cores": 30, "min_replicas": 1, "max_replicas": 1, "cpu": 4, "memory_gib": 32}


@pytest.fixture
def sharing_fleet(db):
    """The shared pool: 8 HAMi L40S, an A100 node with 2 GPUs in MIG, 8 whole H100s; and a node
    of each reserved for the dedicated tenant `helix`."""
    hami_gpu_node()
    mig = NodeFactory()
    for index in range(8):
        GPUFactory(node=mig, index=index, model="nvidia-a100-80gb",
                   mig_layout=["1g.10gb"] * 7 if index < 2 else [])
    whole = NodeFactory()
    for index in range(8):
        GPUFactory(node=whole, index=index, model="nvidia-h100-80gb")
    hami_gpu_node(gpus=4, reserved_for="helix")
    reserved_mig = NodeFactory(reserved_for="helix")
    GPUFactory(node=reserved_mig, index=0, model="nvidia-a100-80gb", mig_layout=["1g.10gb"] * 7)
    reserved = NodeFactory(reserved_for="helix")
    for index in range(4):
        GPUFactory(node=reserved, index=index, model="nvidia-h100-80gb")


def _quota(tenant, **limits):
    defaults = {"cpu": 64, "memory-gib": 512, "count:inference": 4, MEMORY: 48, CORES: 100,
                MIG: 7, "gpu:nvidia-h100-80gb": 4}
    for resource, limit in (defaults | limits).items():
        QuotaFactory(tenant=tenant, resource=resource, limit=limit)


def _launch(tenant, who, name="chat", **spec):
    return services.workload_launch(tenant=tenant, actor=who, kind="inference", name=name,
                                    spec={**SHARE, **spec})


def _dedicated(tenant):
    tenant.isolation = Tenant.Isolation.DEDICATED
    tenant.slug = "helix"
    tenant.save()
    return tenant


# What is offered ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_shared_tenant_is_offered_hami_shares_of_one_gpu_and_mig_of_its_pool(
    tenant, sharing_fleet
):
    offers = {o.resource: o.max_per_node for o in launch_context(tenant=tenant).gpu_offers}

    assert offers[MEMORY] == 44 and offers[CORES] == 100  # one GPU's, not the node's
    assert offers[MIG] == 14 and offers["gpu:nvidia-h100-80gb"] == 8
    assert "gpu:nvidia-l40s" not in offers  # HAMi's GPUs are no whole GPUs
    assert launch_context(tenant=tenant).hami_models() == ["nvidia-l40s"]


@pytest.mark.django_db
def test_a_dedicated_tenant_is_offered_whole_gpus_of_its_reserved_nodes_only(
    tenant, sharing_fleet
):
    _dedicated(tenant)
    _quota(tenant)

    offers = {o.resource: o.max_per_node for o in launch_context(tenant=tenant).gpu_offers}

    assert offers == {"gpu:nvidia-h100-80gb": 4}  # no MIG, no HAMi, not the shared pool's 8


# Admission ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_hami_share_is_held_against_both_its_memory_and_its_compute_quota(
    tenant, tenant_member, sharing_fleet, simulated_gateway
):
    _quota(tenant)
    first = _launch(tenant, tenant_member)

    assert first.demand == {MEMORY: 20, CORES: 30, "cpu": 4, "memory-gib": 32,
                            "count:inference": 1}
    # Memory runs out first: 20 + 30 > 48 GiB, though 30 + 30 % of compute would fit.
    with pytest.raises(ValidationError) as memory:
        _launch(tenant, tenant_member, name="big", gpu_memory_gib=30)
    assert "HAMi GPU memory" in " ".join(memory.value.message_dict["quota"])
    assert "compute" not in " ".join(memory.value.message_dict["quota"])
    # Then compute: 30 + 2 x 40 % > 100 %, though 20 + 2 x 12 GiB would fit.
    with pytest.raises(ValidationError) as compute:
        _launch(tenant, tenant_member, name="wide", gpu_memory_gib=12, gpu_cores=40,
                max_replicas=2)
    assert "HAMi GPU compute" in " ".join(compute.value.message_dict["quota"])
    _launch(tenant, tenant_member, name="small", gpu_memory_gib=14, gpu_cores=70)
    assert tenant_demand_in_use(tenant=tenant)[MEMORY] == 34
    assert tenant_demand_in_use(tenant=tenant)[CORES] == 100
    with pytest.raises(ValidationError) as full:
        _launch(tenant, tenant_member, name="one-more", gpu_memory_gib=1, gpu_cores=10)
    assert "0 of your 100 are left" in " ".join(full.value.message_dict["quota"])


@pytest.mark.django_db
def test_a_mig_endpoint_is_held_against_its_mig_profiles_quota(
    tenant, tenant_member, sharing_fleet, simulated_gateway
):
    _quota(tenant, **{MIG: 3})
    spec = {**INFERENCE_SPEC, "gpu": MIG, "max_replicas": 3}

    workload = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                        name="eval", spec=spec)

    assert workload.demand[MIG] == 3 and "gpu:nvidia-a100-80gb" not in workload.demand
    with pytest.raises(ValidationError) as refused:
        services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                 name="eval-2", spec={**spec, "max_replicas": 1})
    assert "MIG 1g.10gb" in " ".join(refused.value.message_dict["quota"])


@pytest.mark.django_db
def test_a_hami_endpoint_reaches_the_cluster_as_one_vgpu_scheduled_by_hami(
    tenant, tenant_member, sharing_fleet, kube_gateway, kube_emulator
):
    _quota(tenant)
    workload = _launch(tenant, tenant_member, max_replicas=2)

    assert services.workload_reconcile(workload_id=workload.pk) == "progressing"

    service = kube_emulator.get_object(*ISVC, "chat", tenant.namespace)
    labels = service["metadata"]["labels"]
    # Admitted by Kueue through the tenant's shares queue, into the model's HAMi flavor.
    assert (labels["kueue.x-k8s.io/queue-name"], labels["kueue.x-k8s.io/priority-class"]) == (
        "shares", "portal-serving")
    stored = service["spec"]["predictor"]
    assert stored["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    assert stored["schedulerName"] == "hami-scheduler"
    assert stored["annotations"] == {"nvidia.com/use-gputype": "NVIDIA L40S"}
    limits = stored["model"]["resources"]["limits"]
    assert (limits["nvidia.com/gpu"], limits["nvidia.com/gpumem"],
            limits["nvidia.com/gpucores"]) == ("1", "20480", "30")
    assert stored["maxReplicas"] == 2


# The trust rule on every path --------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "spec",
    [SHARE, {**INFERENCE_SPEC, "gpu": MIG}, {**SHARE, "gpu": MEMORY}],
    ids=["hami", "mig", "hami-counter"],
)
def test_a_dedicated_tenant_is_refused_partitions_by_the_service(
    tenant, tenant_member, sharing_fleet, simulated_gateway, spec
):
    _dedicated(tenant)
    _quota(tenant)  # even with partition quota that slipped through

    with pytest.raises(ValidationError) as refused:
        services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                 name="sneaky", spec=spec)

    assert "spec.gpu" in refused.value.message_dict
    assert not Workload.objects.exists()


@pytest.mark.django_db
def test_a_dedicated_tenants_launch_page_offers_no_partition_and_refuses_a_forged_one(
    tenant, tenant_owner, sharing_fleet, login, simulated_gateway
):
    _dedicated(tenant)
    _quota(tenant)
    client = login(tenant_owner)

    url = reverse("tenants:workload-launch", args=[tenant.slug, "inference"])
    page = client.get(url)
    forged = client.post(url, {
        "name": "forged", "model_uri": SHARE["model_uri"], "gpu": HAMI, "gpus_per_replica": 1,
        "min_replicas": 1, "max_replicas": 1, "cpu": 4, "memory_gib": 32,
        "gpu_memory_gib": 20, "gpu_cores": 30,
    })

    form = page.context["form"]
    assert [value for value, _ in form.fields["gpu"].choices] == ["gpu:nvidia-h100-80gb"]
    assert "gpu_memory_gib" not in form.fields
    assert any("dedicated tenants get whole GPUs" in n for n in form.gpu_notes)
    assert forged.status_code == 200 and "gpu" in forged.context["form"].errors
    assert not Workload.objects.exists()


@pytest.mark.django_db
def test_a_dedicated_tenants_whole_gpus_land_only_on_its_reserved_nodes(
    tenant, tenant_member, sharing_fleet, kube_gateway, kube_emulator
):
    _dedicated(tenant)
    _quota(tenant)
    workload = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                        name="train", spec={**INFERENCE_SPEC, "max_replicas": 1})
    services.workload_reconcile(workload_id=workload.pk)

    predictor = kube_emulator.get_object(*ISVC, "train", tenant.namespace)["spec"]["predictor"]
    assert predictor["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                                         "portal.ai-factory.io/reserved-for": "helix"}
    assert "schedulerName" not in predictor
    assert "nvidia.com/gpumem" not in predictor["model"]["resources"]["limits"]


@pytest.mark.django_db
def test_a_share_launched_while_shared_is_not_built_once_the_tenant_is_dedicated(
    tenant, tenant_member, sharing_fleet, kube_gateway, kube_emulator
):
    _quota(tenant)
    workload = _launch(tenant, tenant_member)
    _dedicated(tenant)  # an admin changed its isolation before the reconcile ran

    assert services.workload_reconcile(workload_id=workload.pk) == "failed"

    workload.refresh_from_db()
    assert workload.status == WorkloadStatus.FAILED and workload.status_reason == "Refused"
    assert "dedicated" in workload.status_message
    assert kube_emulator.get_object(*ISVC, "chat", tenant.namespace) is None
    assert not kube_emulator.requests("PATCH")


# The launch and scale forms ----------------------------------------------------------------


@pytest.mark.django_db
def test_a_shared_tenants_launch_form_offers_hami_shares_and_asks_their_size_once_picked(
    tenant, tenant_owner, sharing_fleet, login, simulated_gateway
):
    _quota(tenant, **{"gpu:nvidia-h100-80gb": 0})
    client = login(tenant_owner)
    url = reverse("tenants:workload-launch", args=[tenant.slug, "inference"])
    fields = {"name": "chat", "model_uri": SHARE["model_uri"], "gpus_per_replica": 1,
              "min_replicas": 1, "max_replicas": 2, "cpu": 4, "memory_gib": 32}

    check = reverse("tenants:workload-launch-check", args=[tenant.slug, "inference"])
    page = client.get(url)
    whole = client.post(check, {**fields, "gpu": MIG})
    picked = client.post(check, {**fields, "gpu": HAMI})
    launched = client.post(url, {**fields, "gpu": HAMI, "gpu_memory_gib": "16",
                                 "gpu_cores": "25"})

    choices = dict(page.context["form"].fields["gpu"].choices)
    assert choices[HAMI].startswith("NVIDIA L40S shared through HAMi — up to 44 GiB and 100 % ")
    assert "quota 48 GiB · 100 %" in choices[HAMI]
    assert MIG in choices and "gpu:nvidia-h100-80gb" not in choices  # no quota: a note says so
    assert any("NVIDIA H100 80GB HBM3 GPUs" in n for n in page.context["form"].gpu_notes)
    assert list(choices)[-1] == HAMI  # after the classes of the pool: MIG, the default, first
    assert "gpu_memory_gib" not in page.context["form"].fields  # a MIG instance: no share
    assert 'id="field-gpu_memory_gib"' not in whole.content.decode()
    assert 'id="field-gpu_memory_gib"' in picked.content.decode()
    assert 'id="field-gpu_cores"' in picked.content.decode()
    assert launched.status_code == 302
    workload = Workload.objects.get(name="chat")
    assert workload.demand[MEMORY] == 32 and workload.demand[CORES] == 50
    detail = client.get(launched["Location"]).content.decode()
    assert "32 GiB memory of NVIDIA L40S (HAMi)" in detail
    assert "50 % compute of NVIDIA L40S (HAMi)" in detail


@pytest.mark.django_db
def test_the_scale_form_resizes_a_hami_share_and_shows_no_share_for_a_whole_gpu(
    tenant, tenant_owner, sharing_fleet, login, simulated_gateway
):
    from tenants.workloads.forms import ScaleForm

    _quota(tenant)
    share = _launch(tenant, tenant_owner)
    whole = services.workload_launch(tenant=tenant, actor=tenant_owner, kind="inference",
                                     name="whole", spec={**INFERENCE_SPEC, "max_replicas": 1})

    assert {"gpu_memory_gib", "gpu_cores"} <= set(ScaleForm(workload=share).fields)
    assert "gpu_memory_gib" not in ScaleForm(workload=whole).fields
    scaled = services.workload_scale(workload_id=share.pk, actor=tenant_owner,
                                     changes={"gpu_memory_gib": 40, "gpu_cores": 60})
    assert scaled.demand[MEMORY] == 40 and scaled.demand[CORES] == 60
    with pytest.raises(ValidationError) as refused:
        services.workload_scale(workload_id=share.pk, actor=tenant_owner,
                                changes={"gpu_memory_gib": 44, "max_replicas": 2})
    assert "HAMi GPU memory" in " ".join(refused.value.message_dict["quota"])
