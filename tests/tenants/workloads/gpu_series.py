"""DCGM series of two tenants' workloads for the GPU use tests, in a real Prometheus.

Labelled as the real dcgm-exporter scrape is (tests/data/dcgm), a sample every 30 s over the two
hours up to the minute this module was imported (one Prometheus for every test of a run):

- acme's VM `box`: one GPU of `virt-launcher-box-7xk2p`, 40 %, 1,000 MiB, 100 W;
- globex's inference endpoint `chat`: two predictor pods with a GPU each, 20 % and 60 %,
  3,000 and 5,000 MiB, 150 and 250 W; the first GPU seen through two containers;
- and pods that are not theirs: acme's VM `boxer` (a longer name), a pod named as box's in
  globex's namespace and one named as chat's in acme's.
"""

import time

from tenants.workloads.models import Workload
from tests.inventory.dcgm_series import SCRAPE
from tests.support.fixtures_prometheus import Series, parse_text_exposition

H100 = "gpu:nvidia-h100-80gb"
NOW = int(time.time()) // 60 * 60
BOX_POD = "virt-launcher-box-7xk2p"
CHAT_PODS = ("chat-predictor-5d8f7c9b4-abcde", "chat-predictor-5d8f7c9b4-fghij")
METRICS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE")


def _samples(value: float) -> list[tuple[float, float]]:
    return [(float(t), value) for t in range(NOW - 7200 + 15, NOW + 1, 30)]


def gpu_series() -> Series:
    real = parse_text_exposition(SCRAPE.read_text())
    template = next(labels for name, labels, _ in real if name == "DCGM_FI_DEV_GPU_UTIL")

    def gpu(host, index, namespace, pod, container="main"):
        return template | {
            "Hostname": host, "gpu": str(index), "device": f"nvidia{index}",
            "UUID": f"GPU-{host}-{index}", "modelName": "NVIDIA H100 80GB HBM3",
            "namespace": namespace, "pod": pod, "container": container,
        }

    # (labels, utilization %, memory MiB, power W)
    gpus = [
        (gpu("gpu-a-001", 0, "tenant-acme", BOX_POD), 40, 1000, 100),
        (gpu("gpu-b-002", 3, "tenant-globex", CHAT_PODS[0]), 20, 3000, 150),
        (gpu("gpu-b-002", 3, "tenant-globex", CHAT_PODS[0], "sidecar"), 20, 3000, 150),
        (gpu("gpu-b-002", 5, "tenant-globex", CHAT_PODS[1]), 60, 5000, 250),
        # not theirs
        (gpu("gpu-a-001", 1, "tenant-acme", "virt-launcher-boxer-9qz4m"), 90, 70000, 600),
        (gpu("gpu-b-002", 0, "tenant-globex", BOX_POD), 99, 79000, 700),
        (gpu("gpu-a-001", 2, "tenant-acme", CHAT_PODS[0]), 77, 60000, 500),
    ]
    return {
        metric: [(labels, _samples(values[i])) for labels, *values in gpus]
        for i, metric in enumerate(METRICS)
    }


def box_and_chat(tenant, other_tenant) -> tuple[Workload, Workload]:
    """The two workloads these series are of: acme's VM `box`, globex's endpoint `chat`."""
    box = Workload.objects.create(tenant=tenant, kind="vm", name="box", demand={H100: 1},
                                  status="ready")
    chat = Workload.objects.create(tenant=other_tenant, kind="inference", name="chat",
                                   demand={H100: 2, "cpu": 8}, status="ready")
    return box, chat
