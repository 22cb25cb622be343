"""Clusters in the database whose credentials are a kubeconfig file naming an emulator: the
portal reaches them through its real registry and Kubernetes gateway (no override)."""

from __future__ import annotations

from pathlib import Path

from inventory.models import Cluster

from .kube_emulator import KubeEmulator


def emulated_cluster(
    emulator: KubeEmulator, slug: str, directory: Path, *, name: str = ""
) -> Cluster:
    """The cluster `slug` (created, or the existing one repointed) reached at `emulator`."""
    kubeconfig = emulator.write_kubeconfig(directory / f"{slug}.kubeconfig")
    cluster, _ = Cluster.objects.update_or_create(
        slug=slug,
        defaults={
            "name": name or f"Cluster {slug}",
            "api_server": emulator.url,
            "credentials": Cluster.Credentials.KUBECONFIG,
            "kubeconfig_path": str(kubeconfig),
        },
    )
    return cluster
