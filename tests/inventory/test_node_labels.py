"""Reading Node objects: real GPU Feature Discovery label sets, with and without MIG."""

import pytest

from inventory.node_labels import parse_memory_gib, parse_node
from inventory.pods import pod_placement

from .cluster_objects import (
    RTX_LABELS,
    RTX_NODE,
    gfd_patterns,
    mig_mixed_labels,
    mig_single_labels,
    node,
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
