"""The database itself keeps hardware identifiers unique, whoever writes (import, admin, sync)."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from inventory.models import GPU, NIC, Node
from tests.factories import GPUFactory, NodeFactory

UUID = "GPU-11111111-2222-3333-4444-555555555555"
MAC, GUID = "0c:42:a1:00:00:01", "0c42:a103:0000:0001"


def _nic(**identifier) -> NIC:
    return NIC.objects.create(node=NodeFactory(), name="mlx5_0", **identifier)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("first", "second"),
    [
        (lambda: NodeFactory(serial="SN-1"), lambda: NodeFactory(serial="SN-1")),
        (lambda: NodeFactory(bmc_address="10.0.0.1"), lambda: NodeFactory(bmc_address="10.0.0.1")),
        (lambda: NodeFactory(k8s_name="gpu-x"), lambda: NodeFactory(k8s_name="gpu-x")),
        (lambda: GPUFactory(uuid=UUID), lambda: GPUFactory(uuid=UUID)),
        (lambda: GPUFactory(serial="G-1"), lambda: GPUFactory(serial="G-1")),
        (lambda: _nic(mac_address=MAC), lambda: _nic(mac_address=MAC)),
        (lambda: _nic(ib_guid=GUID), lambda: _nic(ib_guid=GUID)),
    ],
    ids=["node-serial", "bmc-address", "k8s-name", "gpu-uuid", "gpu-serial", "mac", "ib-guid"],
)
def test_duplicate_identifiers_are_refused_by_the_database(first, second):
    first()
    with pytest.raises(IntegrityError), transaction.atomic():
        second()


@pytest.mark.django_db
def test_two_nodes_cannot_share_a_rack_unit_and_a_racked_node_has_a_position():
    node = NodeFactory(position=5)
    with pytest.raises(IntegrityError), transaction.atomic():
        NodeFactory(rack=node.rack, position=5)
    with pytest.raises(IntegrityError), transaction.atomic():
        NodeFactory(rack=node.rack, position=None)


@pytest.mark.django_db
def test_model_validation_refuses_overlapping_units_bad_names_and_unknown_mig_profiles():
    node = NodeFactory(position=10, height_units=4)
    overlapping = Node(hostname="gpu-y", k8s_name="gpu-y", rack=node.rack, position=12)
    with pytest.raises(ValidationError, match="already occupies those units"):
        overlapping.full_clean()
    with pytest.raises(ValidationError, match="not a Kubernetes node name"):
        Node(hostname="GPU-Y", k8s_name="GPU-Y").full_clean()
    gpu = GPU(node=node, index=0, model="nvidia-l40s", memory_gib=48, mig_layout=["1g.10gb"])
    with pytest.raises(ValidationError, match=r"has no MIG profile 1g\.10gb"):
        gpu.full_clean()
