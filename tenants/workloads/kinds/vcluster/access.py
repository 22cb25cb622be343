"""A vCluster reached from a laptop: its API server through the fleet's Gateway, signed in with
the tenant member's Keycloak identity.

Exposure: a Gateway API `TLSRoute` (`gateway.networking.k8s.io/v1`) in the tenant's namespace,
attached to the fleet Gateway's TLS-passthrough listener, routes the SNI hostname
`<release>.<namespace>.<VCLUSTER_DOMAIN>` to the control plane's Service (port 443 → 8443).
Passthrough, not termination: the virtual API server keeps its own certificate and sees the
client's bearer token or client certificate itself, which a terminating proxy would strip. The
portal writes the route (rather than the chart's `controlPlane.tlsRoute`) so that it is checked
against the vendored schema, carries the owner labels (observed, deleted with the workload) and
its acceptance by the Gateway is read back. The hostname is in the certificate through
`controlPlane.proxy.extraSANs` (the chart does not add a TLSRoute host there), and the exported
kubeconfig names it (`exportKubeConfig.server`).

Sign-in: the virtual API server trusts the Keycloak realm (`--oidc-*` flags through
`controlPlane.distro.k8s.apiServer.extraArgs`) with the host cluster's group prefix, and a
manifest the control plane applies inside the vCluster (`experimental.deploy.vcluster.manifests`)
binds the tenant's groups: those that edit its namespace get `cluster-admin` (the vCluster is
theirs), its viewers `view`. People then use a kubeconfig whose user is the `kubectl oidc-login`
exec plugin (int128/kubelogin), not the admin certificate of the `vc-<release>` Secret.
"""

from __future__ import annotations

from typing import Any

import yaml

from ..base import BuildContext, ExternalAccess, Manifest

TLS_ROUTE = ("gateway.networking.k8s.io/v1", "TLSRoute")
SERVICE_PORT = 443
RBAC = "rbac.authorization.k8s.io"
# Inside the vCluster: who the tenant's groups are there.
GROUP_ROLES = (("portal-tenant-edit", "cluster-admin"), ("portal-tenant-view", "view"))
USERNAME_CLAIM = "preferred_username"
GROUPS_CLAIM = "groups"


def external_host(release: str, namespace: str, access: ExternalAccess) -> str:
    """The SNI hostname the Gateway routes to this vCluster (two labels: no two collide)."""
    return f"{release}.{namespace}.{access.vcluster_domain}"


def external_server(release: str, namespace: str, access: ExternalAccess) -> str:
    port = "" if access.gateway_port == 443 else f":{access.gateway_port}"
    return f"https://{external_host(release, namespace, access)}{port}"


def tls_route(release: str, ctx: BuildContext) -> Manifest:
    access = ctx.access
    return {
        "apiVersion": TLS_ROUTE[0],
        "kind": TLS_ROUTE[1],
        "metadata": ctx.metadata(release),
        "spec": {
            "parentRefs": [
                {
                    "name": access.gateway_name,
                    "namespace": access.gateway_namespace,
                    "sectionName": access.gateway_listener,
                }
            ],
            "hostnames": [external_host(release, ctx.namespace, access)],
            "rules": [{"backendRefs": [{"name": release, "port": SERVICE_PORT}]}],
        },
    }


def oidc_flags(access: ExternalAccess) -> list[str]:
    """The virtual API server's flags that accept the realm's ID tokens for kubelogin's client,
    naming users and groups with the host cluster's prefix (so RBAC reads the same there)."""
    prefix = access.oidc_groups_prefix
    return [
        f"--oidc-issuer-url={access.oidc_issuer}",
        f"--oidc-client-id={access.oidc_client_id}",
        f"--oidc-username-claim={USERNAME_CLAIM}",
        f"--oidc-username-prefix={prefix}",
        f"--oidc-groups-claim={GROUPS_CLAIM}",
        f"--oidc-groups-prefix={prefix}",
    ]


def group_bindings(ctx: BuildContext) -> list[Manifest]:
    """ClusterRoleBindings inside the vCluster for the tenant's groups (none without groups)."""
    bindings = []
    for (name, role), groups in zip(GROUP_ROLES, (ctx.edit_groups, ctx.view_groups), strict=True):
        if not groups:
            continue
        bindings.append(
            {
                "apiVersion": f"{RBAC}/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
                "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": g} for g in groups],
            }
        )
    return bindings


def exposed_values(release: str, ctx: BuildContext) -> dict[str, Any]:
    """What the chart values gain when vClusters are exposed: the certificate's extra SAN, the
    exported kubeconfig's server and, with a realm, OIDC sign-in and its group bindings. Merged
    into `chart_values` by `merge_values`."""
    access = ctx.access
    values: dict[str, Any] = {
        "controlPlane": {"proxy": {"extraSANs": [external_host(release, ctx.namespace, access)]}},
        "exportKubeConfig": {"server": external_server(release, ctx.namespace, access)},
    }
    if access.vcluster_oidc:
        values["controlPlane"]["distro"] = {
            "k8s": {"apiServer": {"extraArgs": oidc_flags(access)}}
        }
        bindings = group_bindings(ctx)
        if bindings:
            values["experimental"] = {
                "deploy": {"vcluster": {"manifests": yaml.safe_dump_all(bindings, sort_keys=False)}}
            }
    return values


def merge_values(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`base` with `extra`'s keys set into it, mappings merged key by key."""
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_values(merged[key], value)
        else:
            merged[key] = value
    return merged


def oidc_kubeconfig(
    *, release: str, namespace: str, access: ExternalAccess, certificate_authority: str
) -> str:
    """A kubeconfig for a person: the Gateway's hostname, the vCluster's CA (from the exported
    kubeconfig, when it is there), and the kubelogin exec plugin as its user."""
    cluster: dict[str, Any] = {"server": external_server(release, namespace, access)}
    if certificate_authority:
        cluster["certificate-authority-data"] = certificate_authority
    user = f"oidc@{release}"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": release, "cluster": cluster}],
        "users": [
            {
                "name": user,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "command": "kubectl",
                        "args": [
                            "oidc-login",
                            "get-token",
                            f"--oidc-issuer-url={access.oidc_issuer}",
                            f"--oidc-client-id={access.oidc_client_id}",
                            "--oidc-extra-scope=email",
                            "--oidc-extra-scope=profile",
                        ],
                        "interactiveMode": "IfAvailable",
                    }
                },
            }
        ],
        "contexts": [{"name": release, "context": {"cluster": release, "user": user}}],
        "current-context": release,
    }
    return yaml.safe_dump(config, sort_keys=False)


def certificate_authority(kubeconfig: str) -> str:
    """The base64 CA of the exported kubeconfig's first cluster ("" when it has none)."""
    try:
        config = yaml.safe_load(kubeconfig)
    except yaml.YAMLError:
        return ""
    clusters = (config or {}).get("clusters") if isinstance(config, dict) else None
    for entry in clusters or []:
        data = ((entry or {}).get("cluster") or {}).get("certificate-authority-data")
        if isinstance(data, str):
            return data
    return ""


def route_problem(route: Manifest | None) -> str:
    """Why the Gateway does not carry the route, in its words, or "" when it does or has not
    said yet (a route no Gateway accepted has no parent status)."""
    for parent in ((route or {}).get("status") or {}).get("parents") or []:
        for cond in parent.get("conditions") or []:
            if cond.get("type") in {"Accepted", "ResolvedRefs"} and cond.get("status") == "False":
                return f"{cond.get('reason') or cond['type']}: {cond.get('message') or ''}".strip()
    return ""
