"""factory-boy factories for the portal's models."""

import factory
from django.contrib.auth import get_user_model

from inventory.models import GPU, Node, NodeState, Rack, Site
from tenants.models import Membership, Quota, RoleAssignment, Tenant

TEST_PASSWORD = "correct-horse-battery-staple"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    first_name = factory.Faker("first_name")
    last_name = factory.Faker("last_name")

    @factory.post_generation
    def password(self, create, extracted, **kwargs):
        self.set_password(extracted or TEST_PASSWORD)
        if create:
            self.save(update_fields=["password"])


class TenantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tenant
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"team-{n}")
    name = factory.LazyAttribute(lambda t: t.slug.replace("-", " ").title())
    isolation = Tenant.Isolation.SHARED


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    tenant = factory.SubFactory(TenantFactory)
    role = Membership.Role.MEMBER


class RoleAssignmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RoleAssignment

    user = factory.SubFactory(UserFactory)
    role = RoleAssignment.Role.FINANCE


class QuotaFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Quota

    tenant = factory.SubFactory(TenantFactory)
    resource = "gpu:nvidia-h100-80gb"
    limit = 8


class SiteFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Site
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"site{n}")
    name = factory.LazyAttribute(lambda s: s.slug.upper())


class RackFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Rack

    site = factory.SubFactory(SiteFactory)
    name = factory.Sequence(lambda n: f"r{n:02d}")


class NodeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Node

    hostname = factory.Sequence(lambda n: f"gpu-node-{n:04d}")
    k8s_name = factory.SelfAttribute("hostname")
    serial = factory.Sequence(lambda n: f"SN{n:08d}")
    rack = factory.SubFactory(RackFactory)
    position = factory.Sequence(lambda n: 1 + (n % 40))
    state = NodeState.AVAILABLE
    cpu_cores = 64
    memory_gib = 512


class GPUFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = GPU

    node = factory.SubFactory(NodeFactory)
    index = factory.Sequence(lambda n: n % 8)
    uuid = factory.Sequence(lambda n: f"GPU-{n:08d}-0000-0000-0000-000000000000")
    model = "nvidia-h100-80gb"
    memory_gib = 80


def hami_gpu_node(
    *,
    model: str = "nvidia-l40s",
    gpus: int = 8,
    memory_mib: int = 46068,
    unhealthy: tuple[int, ...] = (),
    registered: bool = True,
    hami_in_use: dict | None = None,
    **node_fields,
) -> Node:
    """A node whose GPUs HAMi shares, as the cluster sync records it: `registered` GPUs (what
    HAMi's device plugin wrote in its register annotation), `unhealthy` ones among them."""
    from inventory.resource_classes import GPU_MODELS

    devices = [
        {"uuid": f"GPU-hami-{i}", "index": i, "count": 10, "memory_mib": memory_mib,
         "cores": 100, "type": GPU_MODELS[model].hami_type, "health": i not in unhealthy,
         "mode": "hami-core"}
        for i in range(gpus)
    ] if registered else []
    node = NodeFactory(gpu_sharing="hami", hami_devices=devices, hami_in_use=hami_in_use or {},
                       **node_fields)
    for index in range(gpus):
        GPUFactory(node=node, index=index, model=model, memory_gib=round(memory_mib / 1024))
    return node
