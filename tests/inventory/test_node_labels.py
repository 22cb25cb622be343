"""Reading Node objects: real GPU Feature Discovery label sets, with and without MIG, and
nodes whose GPUs HAMi shares (its label and register annotation, in both of HAMi's formats)."""

import pytest

from inventory.node_labels import (
    HamiRegisterError,
    parse_hami_register,
    parse_memory_gib,
    parse_node,
)
from inventory.pods import pod_placement

from .cluster_objects import (
    HAMI_NODE,
    RTX_LABELS,
    RTX_NODE,
    gfd_patterns,
    hami_node,
    hami_pod,
    mig_mixed_labels,
    mig_single_labels,
    node,
    plain_labels,
    pod,
)


@pytest.mark.parametrize(
    ("labels", "expected_output"),
    [
        (RTX_LABELS, "gfd-expected-output.txt"),
        (mig_mixed_labels("a100-1"), "gfd-expected-output-mig-mixed.txt"),
        (mig_single_labels("h100-1"), "gfd-expected-output-mig-single.txt"),
    ],
    ids=["none", "mixed", "single"],
)
def test_label_sets_carry_every_label_gpu_feature_discovery_emits(labels, expected_output):
    lines = [f"{key}={value}" for key, value in labels.items()]
    missing = [p.pattern for p in gfd_patterns(expected_output)
               if not any(p.match(line) for line in lines)]
    assert missing == []


def test_the_real_rtx_4000_ada_node_is_one_20_gib_gpu():
    observed = parse_node(node(RTX_NODE, RTX_LABELS, gpus=1, cpu="8", memory="32779776Ki"))

    assert observed.gpu_model.key == "nvidia-rtx-4000-ada"
    assert (observed.gpu_count, observed.gpu_memory_gib) == (1, 20)
    assert observed.mig_capable is False
    assert observed.mig_layouts() == [[]]
    assert (observed.cpu_cores, observed.memory_gib) == (8, 31)
    assert observed.role == "gpu-worker"
    assert observed.ready is True and observed.unschedulable is False
    assert observed.labels["nvidia.com/cuda.driver-version.full"] == "580.95.05"
    assert "lke.linode.com/pool-id" not in observed.labels  # only GPU and topology labels kept


def test_mig_mixed_node_lays_its_mig_devices_out_on_the_first_gpus():
    observed = parse_node(node("a100-1", mig_mixed_labels("a100-1"), gpus=6,
                               mig={"1g.10gb": 14}))

    assert observed.gpu_model.key == "nvidia-a100-80gb"
    assert observed.gpu_count == 8
    assert observed.mig_devices == {"1g.10gb": 14}
    assert observed.mig_layouts() == [["1g.10gb"] * 7] * 2 + [[]] * 6
    assert observed.nvlink_domain == "7b968a6d-c8aa-45e1-9e07-e1e51be99c31.1"


def test_mig_single_node_counts_physical_gpus_not_mig_devices():
    observed = parse_node(node("h100-1", mig_single_labels("h100-1"), gpus=56))

    assert observed.gpu_model.key == "nvidia-h100-80gb"
    assert observed.gpu_count == 8
    assert observed.gpu_memory_gib == 80
    assert observed.mig_layouts() == [["1g.10gb"] * 7] * 8


def test_an_unknown_product_is_reported_not_guessed():
    labels = RTX_LABELS | {"nvidia.com/gpu.product": "Tesla-T4"}
    observed = parse_node(node("t4-1", labels, gpus=1))
    assert observed.gpu_model is None
    assert observed.gpu_product == "Tesla-T4"


def test_a_node_without_gpu_labels_is_a_cpu_worker_and_control_planes_are_recognised():
    worker = parse_node(node("cpu-1", {"kubernetes.io/hostname": "cpu-1"}))
    control = parse_node(
        node("cp-1", {"node-role.kubernetes.io/control-plane": ""}, ready=False)
    )
    assert (worker.role, worker.gpu_count, worker.has_gpus) == ("cpu-worker", 0, False)
    assert control.role == "control-plane" and control.ready is False


@pytest.mark.parametrize(
    ("quantity", "gib"),
    [("32779776Ki", 31), ("512Gi", 512), ("2Ti", 2048), ("1073741824", 1), ("", None)],
)
def test_memory_quantities_are_read_in_gib(quantity, gib):
    assert parse_memory_gib(quantity) == gib


def test_pod_gpu_requests_and_evictability_are_read():
    training = pod_placement(pod("train-0", "tenant-acme", "n1", gpus=4, mig={"1g.10gb": 2}))
    exporter = pod_placement(pod("dcgm-x", "gpu-operator", "n1", daemon_set=True))
    done = pod_placement(pod("job-1", "tenant-acme", "n1", gpus=1, phase="Succeeded"))

    assert (training.gpus, training.mig, training.evictable) == (4, {"1g.10gb": 2}, True)
    assert exporter.evictable is False
    assert done.evictable is False


# HAMi ------------------------------------------------------------------------------------------


def test_a_hami_node_without_gfd_labels_is_read_from_what_hami_registered():
    observed = parse_node(HAMI_NODE)

    assert observed.gpu_sharing == "hami"
    assert observed.hami_labelled and observed.hami_register_error == ""
    assert observed.gpu_model.key == "nvidia-l40s"  # from the registered type "NVIDIA L40S"
    assert (observed.gpu_count, observed.gpu_memory_gib) == (8, 45)  # not the 80 vGPUs
    assert [d.index for d in observed.hami_devices] == list(range(8))
    first, unhealthy = observed.hami_devices[0], observed.hami_devices[5]
    assert (first.uuid, first.count, first.memory_mib, first.cores, first.type, first.mode) == (
        "GPU-5c7a2e31-9f0b-4d2c-8e6a-1b3f4c5d6e70", 10, 46068, 100, "NVIDIA L40S", "hami-core"
    )
    assert first.health is True and unhealthy.health is False  # omitempty: no health, false
    assert observed.labels["gpu"] == "on"
    assert observed.role == "gpu-worker"


def test_gfd_labels_beside_hami_still_name_the_model_and_hami_still_shares():
    labels = plain_labels("h100-hami", product="NVIDIA-H100-80GB-HBM3", count=8,
                          memory_mib=81559)
    register = (
        '[{"id":"GPU-a","count":10,"devmem":81559,"devcore":100,'
        '"type":"NVIDIA H100 80GB HBM3","health":true}]'
    )
    observed = parse_node(hami_node("h100-hami", gfd_labels=labels, register=register))

    assert observed.gpu_model.key == "nvidia-h100-80gb"
    assert observed.gpu_count == 8 and observed.gpu_sharing == "hami"
    assert len(observed.hami_devices) == 1  # the plugin registered one of them so far


def test_the_label_alone_marks_a_node_for_hami_before_its_plugin_registers():
    labelled = parse_node(hami_node("l40s-new", register=None, gfd_labels=plain_labels(
        "l40s-new", product="NVIDIA-L40S", count=8, memory_mib=46068)))
    registered_only = parse_node(hami_node("l40s-old", labelled=False))
    plain = parse_node(node(RTX_NODE, RTX_LABELS, gpus=1))
    mig = parse_node(node("a100-1", mig_mixed_labels("a100-1"), gpus=6, mig={"1g.10gb": 14}))

    assert (labelled.gpu_sharing, labelled.hami_devices, labelled.gpu_count) == ("hami", (), 8)
    assert registered_only.gpu_sharing == "hami" and registered_only.hami_labelled is False
    assert plain.gpu_sharing == "whole"
    assert mig.gpu_sharing == "mig"
    other_gpu_label = parse_node(node("x", RTX_LABELS | {"gpu": "off"}, gpus=1))
    assert other_gpu_label.gpu_sharing == "whole"


def test_the_legacy_colon_format_is_read_too():
    # HAMi's docs/develop/protocol.md example, and the 9-field form EncodeNodeDevices writes.
    docs = (
        "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,"
        "true:GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,"
        "0,true:"
    )
    nine = "GPU-b,10,46068,100,NVIDIA L40S,1,false,1,hami-core:GPU-a,10,46068,100,NVIDIA L40S,0,"\
        "true,0,hami-core:"

    v100s = parse_hami_register(docs)
    l40s = parse_hami_register(nine)

    assert [(d.index, d.memory_mib, d.health) for d in v100s] == [
        (0, 32768, True), (1, 32768, True)
    ]
    assert [(d.uuid, d.index, d.health, d.mode) for d in l40s] == [
        ("GPU-a", 0, True, "hami-core"), ("GPU-b", 1, False, "hami-core")
    ]


def test_an_unknown_registered_type_is_reported_not_guessed():
    observed = parse_node(hami_node("v100-1", register=(
        "GPU-0,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:"
    )))
    assert observed.gpu_model is None and observed.gpu_product == "NVIDIA-Tesla-V100-PCIE-32GB"
    assert observed.gpu_sharing == "hami"


@pytest.mark.parametrize(
    "text",
    [
        "not an annotation",
        "[{\"count\": 10}]",
        "{\"id\": \"GPU-0\"}",
        "[{\"id\": \"GPU-0\", \"devmem\": \"lots\"}]",
        "[{\"id\": \"GPU-0\", \"devmem\": -1}]",
        "[{\"id\": \"GPU-0\", \"health\": \"yes\"}]",
        "[{\"id\": ",
        "GPU-0,10,32768:",
        "GPU-0,ten,32768,100,NVIDIA L40S,0,true:",
        "GPU-0,10,32768,100,NVIDIA L40S,0,maybe:",
        "[" * 10000,
    ],
)
def test_a_malformed_register_annotation_is_an_error_the_sync_reports(text):
    with pytest.raises(HamiRegisterError):
        parse_hami_register(text)
    observed = parse_node(hami_node("bad-1", register=text))
    assert observed.gpu_sharing == "hami" and observed.hami_devices == ()
    assert observed.hami_register_error


def test_repeated_or_missing_indexes_fall_back_to_the_order_hami_lists_them_in():
    devices = parse_hami_register('[{"id":"GPU-a","health":true},{"id":"GPU-b"}]')
    assert [(d.uuid, d.index, d.count, d.memory_mib) for d in devices] == [
        ("GPU-a", 0, 0, 0), ("GPU-b", 1, 0, 0)
    ]


def test_hami_pod_requests_are_read_per_vgpu_as_hamis_scheduler_counts_them():
    memory = pod_placement(hami_pod("a", "tenant-acme", "n1", vgpus=2, gpumem=3000,
                                    gpucores=30))
    fraction = pod_placement(hami_pod("b", "tenant-acme", "n1", gpumem_percentage=50,
                                      gpucores=25))
    default = pod_placement(hami_pod("c", "tenant-acme", "n1"))

    assert (memory.gpus, memory.hami) == (2, {"memory_mib": 6000, "cores": 60})
    assert fraction.hami == {"memory_percent": 50, "cores": 25}
    assert default.hami == {"memory_percent": 100}  # HAMi's default: all of the GPU's memory
    assert fraction.hami_memory_mib(46068) == 23034
    assert default.hami_memory_mib(46068) == 46068
    assert memory.as_record() == {"namespace": "tenant-acme", "name": "a", "gpus": 2, "mig": {}}
    assert memory.as_record(hami=True)["hami"] == {"memory_mib": 6000, "cores": 60}
