"""The declarations of the variables that say how people reach their workloads: notebooks, and
vClusters and SSH from outside the cluster (a part of portal/config_vars.py's SECTIONS)."""

from .config_var_types import Section, Var

NOTEBOOKS = Section(
    "Notebooks",
    "(see [Workloads](workloads.md#notebooks))",
    (
        Var("NOTEBOOK_GATEWAY", "",
            "`<namespace>/<name>` of the Gateway that serves notebooks over HTTPS behind "
            "Keycloak sign-in", shown="`INFERENCE_GATEWAY`"),
        Var("NOTEBOOK_GATEWAY_LISTENER", "https",
            "the name of that Gateway's HTTPS listener for `*.<NOTEBOOK_DOMAIN>`"),
        Var("NOTEBOOK_DOMAIN", "",
            "DNS suffix of the notebooks: each is `https://<name>-<tenant>.<domain>`; empty: "
            "reached with `kubectl port-forward` only",
            shown="`notebooks.demo.internal` with the simulated fleet, else empty"),
        Var("NOTEBOOK_OIDC_CLIENT_ID", "notebooks",
            "the Keycloak confidential client the gateway signs people in to notebooks with"),
        Var("NOTEBOOK_OIDC_CLIENT_SECRET", "",
            "its secret, put in a Secret `portal-notebook-oidc` of each tenant namespace for "
            "the gateway's sign-in policy (docs/deployment.md)"),
        Var("NOTEBOOK_HOME_GIB", "50",
            "size of each person's home volume in a tenant (may grow, never shrink)"),
        Var("NOTEBOOK_HOME_STORAGE_CLASS", "",
            "storage class of the home volumes", shown="empty (the cluster's default)"),
        Var("NOTEBOOK_HOME_ACCESS_MODE", "ReadWriteOnce",
            "`ReadWriteOnce` or `ReadWriteOncePod`: one running notebook per person and "
            "tenant; `ReadWriteMany`: several"),
        Var("NOTEBOOK_IDLE_HOURS", "24",
            "the default for tenants that chose none: a notebook nobody used for this many "
            "hours is stopped (0: never)"),
    ),
)

REMOTE_ACCESS = Section(
    "vClusters and SSH from outside the cluster",
    "(see [Workloads](workloads.md#reaching-workloads-from-a-laptop))",
    (
        Var("VCLUSTER_DOMAIN", "",
            "DNS suffix under which vCluster API servers are published through the fleet's "
            "Gateway, as `<vcluster>.<namespace>.<suffix>` (TLS passthrough by SNI; a wildcard "
            "DNS record `*.<suffix>` points at the Gateway), e.g. `vc.example.com`; empty "
            "keeps them in-cluster"),
        Var("VCLUSTER_GATEWAY", "ingress-gateway/fleet",
            "`<namespace>/<name>` of the Gateway whose TLS-passthrough listener carries every "
            "vCluster's TLSRoute"),
        Var("VCLUSTER_GATEWAY_LISTENER", "tls-passthrough",
            "that listener's name (the routes' `sectionName`): `protocol: TLS`, `tls.mode: "
            "Passthrough`, hostname `*.<VCLUSTER_DOMAIN>`, routes allowed from tenant "
            "namespaces"),
        Var("VCLUSTER_GATEWAY_PORT", "443",
            "that listener's port, in the kubeconfig's server URL"),
        Var("VCLUSTER_OIDC_CLIENT_ID", "kubernetes",
            "the Keycloak public client `kubectl oidc-login` signs in with: the virtual API "
            "servers accept its ID tokens from `OIDC_ISSUER_URL` and bind the tenant's groups "
            "(with `KUBERNETES_OIDC_GROUPS_PREFIX`); empty, or no `OIDC_ISSUER_URL`: the "
            "kubeconfig's client certificate only"),
        Var("SSH_LOAD_BALANCER", "true",
            "give each VM and Slurm login node a LoadBalancer Service on port 22 (needs an "
            "address pool, e.g. MetalLB's); `false` keeps SSH in-cluster"),
        Var("SSH_SOURCE_RANGES", "",
            "comma-separated CIDRs allowed to reach those Services (their "
            "`loadBalancerSourceRanges`, and the tenant NetworkPolicy's SSH rule)",
            shown="anywhere (`0.0.0.0/0`, `::/0`)"),
    ),
)
