"""What a person needs to use a ready vCluster: its API server, the kubeconfig and the commands,
in-cluster or from a laptop through the fleet's Gateway (`access`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..base import BuildContext, Connection, Manifest, ObjectKey
from . import access as _access
from .chart import (
    DEFAULT_VERSION,
    KUBECONFIG_KEY,
    SECRET,
    kubeconfig_from_secret,
    kubeconfig_secret_name,
    release_name,
    server_url,
)


def connection(
    objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
) -> Connection:
    """How to reach the vCluster's API server: through the fleet's Gateway when it is exposed
    (`VCLUSTER_DOMAIN`), else in-cluster, by `vcluster connect` or a port-forward."""
    release, namespace = release_name(ctx.name), ctx.namespace
    server, secret = server_url(release, namespace), kubeconfig_secret_name(release)
    kubeconfig = f"vcluster-{ctx.name}.yaml"
    download = (
        f"kubectl -n {namespace} get secret {secret}"
        f" -o jsonpath='{{.data.{KUBECONFIG_KEY}}}' | base64 -d > {kubeconfig}"
    )
    items = (
        ("API server (in-cluster)", server),
        ("Kubeconfig Secret", f"{secret} (key {KUBECONFIG_KEY})"),
        ("Namespace", namespace),
        ("Kubernetes version", spec.get("kubernetes_version") or DEFAULT_VERSION),
    )
    if ctx.access.vcluster_domain:
        return _outside_connection(objects, ctx, items, download, kubeconfig)
    forwarded = f"kubectl --kubeconfig {kubeconfig} --server https://localhost:8443"
    return Connection(
        items=items,
        commands=(
            ("Download the kubeconfig", download),
            ("Use it", f"kubectl --kubeconfig {kubeconfig} get namespaces"),
            ("Connect from outside the cluster", f"vcluster connect {release} -n {namespace}"),
            (
                "Or forward a local port",
                f"kubectl -n {namespace} port-forward svc/{release} 8443:443",
            ),
            ("…and use the forwarded port", f"{forwarded} get namespaces"),
        ),
        notes=(
            f"The kubeconfig's server is the in-cluster Service {server}: it is reachable from"
            " the tenant's namespace, from the tenant's own pods and from pods inside the"
            " vCluster.",
            "From outside the cluster, use “vcluster connect” or the port-forward above, with"
            " your kubeconfig for the tenant's namespace; https://localhost:8443 is in the"
            " control plane's certificate.",
            "The kubeconfig holds the vCluster's admin credentials: keep it like a password.",
        ),
    )


def _outside_connection(
    objects: Mapping[ObjectKey, Manifest],
    ctx: BuildContext,
    items: tuple[tuple[str, str], ...],
    download: str,
    kubeconfig: str,
) -> Connection:
    """The API server through the fleet's Gateway: with a realm, a kubeconfig that signs in
    with Keycloak (kubelogin); without, the exported admin kubeconfig, which names it too."""
    release, namespace, access = release_name(ctx.name), ctx.namespace, ctx.access
    external = _access.external_server(release, namespace, access)
    items = (("API server", external), *items)
    check = f"kubectl --kubeconfig {kubeconfig} get namespaces"
    if not access.vcluster_oidc:
        return Connection(
            items=items,
            commands=(("Download the kubeconfig", download), ("Use it from your machine", check)),
            notes=(
                f"The kubeconfig's server is {external}, the fleet's gateway, which passes the"
                " connection through to the vCluster's API server.",
                "The kubeconfig holds the vCluster's admin credentials: keep it like a password.",
            ),
        )
    secret = objects.get((*SECRET, kubeconfig_secret_name(release)))
    try:
        authority = _access.certificate_authority(kubeconfig_from_secret(secret))
    except ValueError:
        authority = ""
    config = _access.oidc_kubeconfig(
        release=release, namespace=namespace, access=access, certificate_authority=authority
    )
    return Connection(
        items=items,
        commands=(
            ("Install the kubelogin plugin once (krew, or brew install kubelogin)",
             "kubectl krew install oidc-login"),
            (f"Save this kubeconfig as {kubeconfig}",
             f"cat > {kubeconfig} <<'EOF'\n{config}EOF"),
            ("Sign in with your Keycloak account and use it", check),
            ("Or make it your current kubeconfig",
             f"export KUBECONFIG=$PWD/{kubeconfig} && kubectl auth whoami"),
        ),
        notes=(
            f"The API server is reached at {external} through the fleet's gateway, which passes"
            " the TLS connection through to the vCluster: the certificate is the vCluster's own.",
            "kubectl opens your browser to sign in with Keycloak; your tenant's groups are bound"
            " inside the vCluster (owners and members: cluster-admin, viewers: view). The"
            " kubeconfig holds no secret.",
            "The admin kubeconfig (Download kubeconfig) also reaches it there: keep that one like"
            " a password.",
        ),
    )
