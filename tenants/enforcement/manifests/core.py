"""Core Kubernetes objects of a tenant: Namespace, ResourceQuota, LimitRange, NetworkPolicy,
RoleBindings. The ResourceQuota is where a shared tenant's HAMi shares are enforced on the
cluster (see `resource_quota_hard`)."""

from __future__ import annotations

from collections import defaultdict

from inventory import resource_classes

from .spec import (
    COUNT_RESOURCES,
    HAMI_RESOURCES,
    ISOLATION_LABEL,
    LIMIT_RANGE,
    NAMESPACE_NAME_LABEL,
    NETWORK_POLICY,
    PORTAL_ROLE_BINDING,
    RESOURCE_QUOTA,
    ROLE_BINDING,
    VIEW_ROLE_BINDING,
    Manifest,
    TenantSpec,
    ceiling,
    gib,
    mig_resource_names,
    object_labels,
    object_meta,
)


def namespace_manifest(spec: TenantSpec) -> Manifest:
    labels = object_labels(spec) | {
        ISOLATION_LABEL: spec.isolation,
        "pod-security.kubernetes.io/enforce": "baseline",
    }
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": spec.namespace, "labels": labels},
    }


def hami_vgpu_allowance(spec: TenantSpec) -> int:
    """How many vGPUs a shared tenant's HAMi grants can hold at once: every share the portal
    launches is one vGPU of at least HAMI_MIN_CORES percent, so a compute grant of c percent
    holds at most c // HAMI_MIN_CORES of them. 0 for dedicated tenants."""
    if spec.dedicated:
        return 0
    return sum(
        grant.limit // resource_classes.HAMI_MIN_CORES
        for grant in spec.grants
        if grant.resource.startswith("hami:") and grant.resource.endswith(":cores")
    )


def resource_quota_hard(spec: TenantSpec) -> dict[str, str]:
    """ResourceQuota `hard`: every GPU and MIG resource, VMs' passthrough GPUs, HAMi's shares,
    CPU, memory, storage and counts.

    What is not granted is 0, so a new resource or a forgotten grant is denied, not unlimited.
    In a cohort, GPU ceilings include what the tenant may borrow (Kueue meters the borrowing).

    HAMi shares (shared tenants only; a dedicated tenant's are 0 whatever its grants say):
    - `limits.nvidia.com/gpumem` (MiB) and `limits.nvidia.com/gpucores` (percent) are the keys
      HAMi's scheduler enforces (it reads only the `limits.` prefix, per namespace, counting what
      each vGPU really gets: gpumem times the vGPU count, all of a GPU's memory when a pod names
      none). One namespace-wide figure each, so the grants of every GPU model are summed: the
      portal's admission keeps each model's grant;
    - `requests.nvidia.com/gpumem|gpucores`, the same figures, are what the API server enforces
      at pod creation (it counts a container's value once, whatever its vGPU count);
    - the API server counts HAMi's vGPUs as `nvidia.com/gpu`, so `requests.nvidia.com/gpu` is the
      whole GPUs plus `hami_vgpu_allowance`: without it no HAMi pod would be admitted.
    """
    gpus: dict[str, int] = defaultdict(int)
    gpus[resource_classes.GPU_RESOURCE] = 0
    for name in mig_resource_names():
        gpus[name] = 0
    hami = dict.fromkeys(HAMI_RESOURCES, 0)
    scalars = {"cpu": 0, "memory-gib": 0, "storage-gib": 0}
    counts = dict.fromkeys(COUNT_RESOURCES, 0)
    for grant in spec.grants:
        rc = resource_classes.parse(grant.resource)
        if rc.kind in {"gpu", "mig"}:
            if rc.kind == "mig" and spec.dedicated:
                continue  # partitions only inside one trust domain
            gpus[rc.kubernetes_resource] += ceiling(spec, grant)
        elif rc.kind == "hami":
            if spec.dedicated:
                continue  # partitions only inside one trust domain
            hami[rc.kubernetes_resource] += int(rc.kubernetes_quantity(grant.limit))
        elif rc.kind == "scalar":
            scalars[rc.key] = grant.limit
        elif rc.kind == "count" and rc.key.split(":", 1)[1] in COUNT_RESOURCES:
            counts[rc.key.split(":", 1)[1]] = grant.limit
    gpus[resource_classes.GPU_RESOURCE] += hami_vgpu_allowance(spec)
    # A VM's passthrough GPUs are a resource per model: each has its model's whole-GPU ceiling
    # (the portal's admission holds a model's containers and VMs together to the grant).
    for model_key, name in resource_classes.PASSTHROUGH_RESOURCES.items():
        gpus[name] = next(
            (ceiling(spec, g) for g in spec.grants
             if g.resource == resource_classes.gpu_class(model_key)), 0)
    hard = {f"requests.{name}": str(amount) for name, amount in sorted(gpus.items())}
    for name, amount in hami.items():
        hard[f"requests.{name}"] = str(amount)
        hard[f"limits.{name}"] = str(amount)
    hard |= {
        "requests.cpu": str(scalars["cpu"]),
        "requests.memory": gib(scalars["memory-gib"]),
        "requests.storage": gib(scalars["storage-gib"]),
    }
    hard |= {COUNT_RESOURCES[kind]: str(amount) for kind, amount in counts.items()}
    return hard


def resource_quota_manifest(spec: TenantSpec) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": object_meta(RESOURCE_QUOTA, spec),
        "spec": {"hard": resource_quota_hard(spec)},
    }


def limit_range_manifest(spec: TenantSpec) -> Manifest:
    # Defaults let pods without requests start under a quota that counts requests.
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": object_meta(LIMIT_RANGE, spec),
        "spec": {
            "limits": [
                {
                    "type": "Container",
                    "default": {"cpu": "1", "memory": "2Gi"},
                    "defaultRequest": {"cpu": "250m", "memory": "512Mi"},
                },
                {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}},
            ]
        },
    }


def network_policy_manifest(spec: TenantSpec) -> Manifest:
    """Default deny: traffic only inside the tenant, in from the ingress gateway (and the
    gateways publishing its endpoints and notebooks), out to DNS; and SSH (TCP 22) in from
    `ssh_sources`, which only the pods behind a LoadBalancer Service (VMs, Slurm login nodes)
    are reached on from outside."""
    same_tenant = {"podSelector": {}}
    ingress_gateway = {
        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: spec.ingress_namespace}}
    }
    ingress: list[dict] = [{"from": [same_tenant]}, {"from": [ingress_gateway]}]
    for namespace in spec.gateway_namespaces:
        if namespace != spec.ingress_namespace:
            ingress.append({"from": [{"namespaceSelector": {
                "matchLabels": {NAMESPACE_NAME_LABEL: namespace}}}]})
    cluster_dns = {
        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: "kube-system"}},
        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
    }
    if spec.ssh_sources:
        ingress.append({
            "from": [{"ipBlock": {"cidr": cidr}} for cidr in spec.ssh_sources],
            "ports": [{"protocol": "TCP", "port": 22}],
        })
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": object_meta(NETWORK_POLICY, spec),
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": ingress,
            "egress": [
                {"to": [same_tenant]},
                {
                    "to": [cluster_dns],
                    "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
                },
            ],
        },
    }


def _binding(name: str, role: str, groups: tuple[str, ...], spec: TenantSpec) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": object_meta(name, spec),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}
            for group in groups
        ],
    }


def role_binding_manifests(spec: TenantSpec) -> list[Manifest]:
    """Owners and members edit the namespace; viewers only read it; the portal's own account
    handles the Secrets of its workloads here (vCluster kubeconfigs, Slurm keys)."""
    account, account_namespace = spec.portal_account
    portal = _binding(PORTAL_ROLE_BINDING, spec.secrets_role, (), spec)
    portal["subjects"] = [
        {"kind": "ServiceAccount", "name": account, "namespace": account_namespace}
    ]
    return [
        _binding(ROLE_BINDING, spec.edit_role, spec.edit_groups, spec),
        _binding(VIEW_ROLE_BINDING, spec.view_role, spec.view_groups, spec),
        portal,
    ]
