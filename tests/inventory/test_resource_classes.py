"""The resource-class vocabulary: every key parses back to itself, HAMi shares included, and
the keys that existed before HAMi keep their meaning."""

import pytest
from django.core.exceptions import ValidationError

from inventory import resource_classes
from inventory.resource_classes import UnknownResourceClass, parse
from tenants.quota import rules as quota_rules

H100 = "nvidia-h100-80gb"


def test_every_key_parses_back_to_itself_with_a_label_and_a_kind():
    keys = resource_classes.all_keys()
    assert len(keys) == len(set(keys))
    for key in keys:
        rc = parse(key)
        assert rc.key == key
        assert rc.kind in {"gpu", "mig", "hami", "scalar", "count"}
        assert rc.label


def test_the_keys_before_hami_keep_their_kind_resource_and_label():
    gpu, mig = parse(f"gpu:{H100}"), parse(f"mig:{H100}:1g.10gb")
    assert (gpu.kind, gpu.kubernetes_resource, gpu.label) == (
        "gpu", "nvidia.com/gpu", "NVIDIA H100 80GB HBM3 GPUs"
    )
    assert (mig.kind, mig.kubernetes_resource) == ("mig", "nvidia.com/mig-1g.10gb")
    assert parse("memory-gib").kubernetes_resource == "memory"
    assert parse("count:slurm").label == "Slurm clusters"
    assert resource_classes.all_keys()[: len(resource_classes.GPU_MODELS)] == [
        f"gpu:{m}" for m in resource_classes.GPU_MODELS
    ]


def test_hami_shares_are_two_counters_per_gpu_model():
    memory = parse(resource_classes.hami_key(H100, "memory-gib"))
    cores = parse(f"hami:{H100}:cores")

    assert memory.key == f"hami:{H100}:memory-gib"
    assert (memory.kind, memory.gpu_model.key, memory.hami_counter) == ("hami", H100, "memory-gib")
    assert memory.kubernetes_resource == "nvidia.com/gpumem"
    assert cores.kubernetes_resource == "nvidia.com/gpucores"
    assert memory.label == "NVIDIA H100 80GB HBM3 HAMi GPU memory (GiB)"
    assert cores.label == "NVIDIA H100 80GB HBM3 HAMi GPU compute (% of a GPU)"
    assert memory.node_selector == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    hami_keys = [k for k in resource_classes.all_keys() if k.startswith("hami:")]
    assert len(hami_keys) == 2 * len(resource_classes.GPU_MODELS)


def test_kubernetes_counts_hami_memory_in_mib_and_compute_in_percent():
    assert parse(f"hami:{H100}:memory-gib").kubernetes_quantity(10) == "10240"
    assert parse(f"hami:{H100}:cores").kubernetes_quantity(30) == "30"
    assert parse("memory-gib").kubernetes_quantity(64) == "64Gi"
    assert parse("storage-gib").kubernetes_quantity(500) == "500Gi"
    assert parse(f"gpu:{H100}").kubernetes_quantity(8) == "8"


def test_one_gpu_holds_its_memory_or_a_hundred_percent():
    assert resource_classes.hami_limit_per_gpu(parse(f"hami:{H100}:memory-gib")) == 80
    assert resource_classes.hami_limit_per_gpu(parse("hami:nvidia-h200:memory-gib")) == 141
    assert resource_classes.hami_limit_per_gpu(parse(f"hami:{H100}:cores")) == 100
    with pytest.raises(UnknownResourceClass):
        resource_classes.hami_limit_per_gpu(parse(f"gpu:{H100}"))


@pytest.mark.parametrize(
    "key",
    [
        "hami:",
        f"hami:{H100}",
        f"hami:{H100}:",
        f"hami:{H100}:memory",
        "hami:nvidia-v100:cores",
        f"hami:{H100}:cores:extra",
        f"hami-mem:{H100}",
        f"HAMI:{H100}:cores",
    ],
)
def test_malformed_hami_keys_are_unknown(key):
    with pytest.raises(UnknownResourceClass):
        parse(key)


def test_quota_requests_offer_hami_shares_to_shared_tenants_only():
    shared = dict(quota_rules.requestable_choices("shared"))
    dedicated = dict(quota_rules.requestable_choices("dedicated"))

    assert (f"hami:{H100}:cores", parse(f"hami:{H100}:cores").label) in shared["HAMi GPU shares"]
    assert "HAMi GPU shares" not in dedicated and "MIG partitions" not in dedicated
    assert quota_rules.check_resource(resource=f"hami:{H100}:cores", isolation="shared")
    with pytest.raises(ValidationError, match="trust domain"):
        quota_rules.check_resource(resource=f"hami:{H100}:cores", isolation="dedicated")
    quota_rules.check_amount(amount=8 * 80, resource_class=parse(f"hami:{H100}:memory-gib"))
