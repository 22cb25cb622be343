"""The fleet gateway for a real cluster: the official `kubernetes` client over HTTP."""

from __future__ import annotations

import base64
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import urllib3
import yaml
from django.conf import settings
from kubernetes import client, config
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError
from kubernetes.dynamic.resource import Resource

from .base import (
    Connection,
    FleetError,
    FleetGateway,
    Manifest,
    PermanentFleetError,
    classify,
)

# Retry only failed connects (the request never left), quickly: Celery retries everything else
# with backoff, and a retried read of a PATCH/POST could apply it twice.
DEFAULT_RETRIES = urllib3.Retry(total=2, connect=2, read=0, status=0, other=0, backoff_factor=0.2)
# Kueue's visibility API: an aggregated API, not a kind discovery finds (its paths hold a
# slash in the resource, which CustomObjectsApi would URL-encode).
PENDING_WORKLOADS = ("/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{namespace}"
                     "/localqueues/{local_queue}/pendingworkloads")
# A bound on one list's pages, far above any fleet's: a server that never stops paging is a bug.
MAX_PAGES = 10_000


def build_api_client(
    *, kubeconfig: str = "", context: str = "", retries: int | urllib3.Retry | None = None,
    kubeconfig_dict: dict[str, Any] | None = None,
) -> client.ApiClient:
    """An ApiClient from a kubeconfig (a file, ~/.kube/config, or one already read), or the
    in-cluster config in a Pod."""
    configuration = client.Configuration()
    if kubeconfig_dict is not None:
        config.load_kube_config_from_dict(
            kubeconfig_dict, context=context or None, client_configuration=configuration,
            persist_config=False,
        )
    elif kubeconfig or not os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_kube_config(
            config_file=kubeconfig or None,
            context=context or None,
            client_configuration=configuration,
            persist_config=False,
        )
    else:
        config.load_incluster_config(client_configuration=configuration)
    configuration.retries = DEFAULT_RETRIES if retries is None else retries
    return client.ApiClient(configuration)


def _kubeconfig_from_secret(name: str) -> dict[str, Any]:
    """The kubeconfig a Secret in the portal's own namespace holds (key `kubeconfig`), read
    with the portal's own credentials."""
    own = build_api_client(kubeconfig=settings.FLEET_KUBECONFIG,
                           context=settings.FLEET_KUBE_CONTEXT)
    try:
        secret = client.CoreV1Api(own).read_namespaced_secret(
            name, settings.FLEET_SERVICE_ACCOUNT_NAMESPACE,
            _request_timeout=settings.FLEET_REQUEST_TIMEOUT,
        )
    finally:
        own.close()
    encoded = (secret.data or {}).get("kubeconfig")
    if not encoded:
        raise PermanentFleetError(f"Secret {name} has no key 'kubeconfig'")
    loaded = yaml.safe_load(base64.b64decode(encoded))
    if not isinstance(loaded, dict):
        raise PermanentFleetError(f"Secret {name}'s kubeconfig is not a kubeconfig")
    return loaded


def connect(connection: Connection, *, retries: int | urllib3.Retry | None = None
            ) -> client.ApiClient:
    """An ApiClient for the cluster `connection` describes."""
    if connection.secret:
        return build_api_client(kubeconfig_dict=_kubeconfig_from_secret(connection.secret),
                                context=connection.context, retries=retries)
    if connection.kubeconfig:
        return build_api_client(kubeconfig=connection.kubeconfig, context=connection.context,
                                retries=retries)
    return build_api_client(kubeconfig=settings.FLEET_KUBECONFIG,
                            context=settings.FLEET_KUBE_CONTEXT, retries=retries)


class _TimedDynamicClient(DynamicClient):
    """A DynamicClient whose own discovery requests also carry the request timeout."""

    def __init__(self, api_client: client.ApiClient, *, timeout: float, **kwargs: Any) -> None:
        self._default_timeout = timeout
        super().__init__(api_client, **kwargs)

    def request(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        params.setdefault("_request_timeout", self._default_timeout)
        return super().request(method, path, body=body, **params)


@contextmanager
def _classified() -> Iterator[None]:
    try:
        yield
    except ResourceNotFoundError as exc:
        raise PermanentFleetError(f"the cluster serves no such kind: {exc}", status=404) from exc
    except (client.ApiException, urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
        raise classify(exc) from exc
    except config.ConfigException as exc:
        raise PermanentFleetError(f"cannot configure the Kubernetes client: {exc}") from exc


class KubernetesFleetGateway(FleetGateway):
    """Talks to one cluster; discovery is resolved once and cached for the process."""

    backend = "kubernetes"

    def __init__(
        self,
        *,
        connection: Connection | None = None,
        api_client: client.ApiClient | None = None,
        request_timeout: float | None = None,
        field_manager: str | None = None,
        retries: int | urllib3.Retry | None = None,
        discovery_cache_file: str | None = None,
        page_size: int | None = None,
    ) -> None:
        self.connection = connection or Connection(cluster="")
        self._api_client = api_client
        self._retries = retries
        self.request_timeout = (
            settings.FLEET_REQUEST_TIMEOUT if request_timeout is None else request_timeout
        )
        self.field_manager = field_manager or settings.FLEET_FIELD_MANAGER
        self.page_size = page_size or settings.FLEET_LIST_PAGE_SIZE
        self._discovery_cache_file = discovery_cache_file
        self._dynamic: DynamicClient | None = None
        self._resources: dict[tuple[str, str], Resource] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            if self._api_client is not None:
                self._api_client.close()

    def probe(self) -> str:
        # GET /version: answered by any API server to any authenticated client, no discovery.
        api_client = self.api_client
        with _classified():
            info = client.VersionApi(api_client).get_code(_request_timeout=self.request_timeout)
        return str(info.git_version or "")

    # Construction is lazy: building the DynamicClient already talks to the API server.
    @property
    def api_client(self) -> client.ApiClient:
        with self._lock:
            if self._api_client is None:
                with _classified():
                    self._api_client = connect(self.connection, retries=self._retries)
            return self._api_client

    @property
    def dynamic(self) -> DynamicClient:
        api_client = self.api_client
        with self._lock:
            if self._dynamic is None:
                with _classified():
                    self._dynamic = _TimedDynamicClient(
                        api_client,
                        timeout=self.request_timeout,
                        cache_file=self._discovery_cache_file,
                    )
            return self._dynamic

    def _resource(self, api_version: str, kind: str) -> Resource:
        key = (api_version, kind)
        if key not in self._resources:
            with _classified():
                # Naming the prefix keeps a core-group lookup from scanning every API group.
                self._resources[key] = self.dynamic.resources.get(
                    prefix="apis" if "/" in api_version else "api",
                    api_version=api_version,
                    kind=kind,
                )
        return self._resources[key]

    def _scope(self, resource: Resource, namespace: str | None) -> str | None:
        if not resource.namespaced:
            return None
        if not namespace:
            raise PermanentFleetError(f"{resource.kind} is namespaced: a namespace is required")
        return namespace

    def apply(self, *, manifests: list[Manifest]) -> list[Manifest]:
        stored = []
        for manifest in manifests:
            api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
            metadata = manifest.get("metadata") or {}
            if not api_version or not kind or not metadata.get("name"):
                raise PermanentFleetError("a manifest needs apiVersion, kind and metadata.name")
            resource = self._resource(api_version, kind)
            namespace = self._scope(resource, metadata.get("namespace"))
            with _classified():
                result = self.dynamic.server_side_apply(
                    resource,
                    body=manifest,
                    name=metadata["name"],
                    namespace=namespace,
                    field_manager=self.field_manager,
                    force_conflicts=True,
                    _request_timeout=self.request_timeout,
                )
            stored.append(_with_type(result.to_dict(), api_version, kind))
        return stored

    def create(self, *, manifest: Manifest) -> bool:
        api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
        metadata = manifest.get("metadata") or {}
        if not api_version or not kind or not metadata.get("name"):
            raise PermanentFleetError("a manifest needs apiVersion, kind and metadata.name")
        resource = self._resource(api_version, kind)
        namespace = self._scope(resource, metadata.get("namespace"))
        try:
            with _classified():
                self.dynamic.create(
                    resource, body=manifest, namespace=namespace,
                    _request_timeout=self.request_timeout,
                )
        except FleetError as exc:
            if exc.status == 409:  # AlreadyExists: keep it as it is
                return False
            raise
        return True

    def get(
        self, *, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Manifest | None:
        resource = self._resource(api_version, kind)
        scope = self._scope(resource, namespace)
        try:
            with _classified():
                result = self.dynamic.get(
                    resource, name=name, namespace=scope, _request_timeout=self.request_timeout
                )
        except PermanentFleetError as exc:
            if isinstance(exc.__cause__, NotFoundError):
                return None
            raise
        return _with_type(result.to_dict(), api_version, kind)

    def delete(
        self, *, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> bool:
        resource = self._resource(api_version, kind)
        scope = self._scope(resource, namespace)
        try:
            with _classified():
                self.dynamic.delete(
                    resource,
                    name=name,
                    namespace=scope,
                    propagation_policy="Background",
                    _request_timeout=self.request_timeout,
                )
        except PermanentFleetError as exc:
            if isinstance(exc.__cause__, NotFoundError):
                return False
            raise
        return True

    def list(
        self,
        *,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[Manifest]:
        resource = self._resource(api_version, kind)
        scope = namespace if resource.namespaced else None
        items = self._pages(resource, namespace=scope, label_selector=label_selector)
        return [_with_type(item, api_version, kind) for item in items]

    def list_pods_on_node(self, *, node: str) -> list[Manifest]:
        # The API server filters on the node: a drain never reads the rest of the cluster's pods.
        resource = self._resource("v1", "Pod")
        items = self._pages(resource, field_selector=f"spec.nodeName={node}")
        return [_with_type(item, "v1", "Pod") for item in items]

    def _pages(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        """Every item of a list, read `page_size` at a time (limit/continue); a continue token
        that expired (410) mid-way starts the list over, once."""
        for attempt in range(2):
            items: list[dict[str, Any]] = []
            token = None
            try:
                for _ in range(MAX_PAGES):
                    with _classified():
                        page = self.dynamic.get(
                            resource,
                            namespace=namespace,
                            label_selector=label_selector or None,
                            field_selector=field_selector or None,
                            limit=self.page_size,
                            _continue=token,
                            _request_timeout=self.request_timeout,
                        ).to_dict()
                    items += page.get("items") or []
                    token = (page.get("metadata") or {}).get("continue")
                    if not token:
                        return items
            except PermanentFleetError as exc:
                if exc.status == 410 and token and attempt == 0:
                    continue
                raise
            break
        raise PermanentFleetError(f"listing {resource.kind} did not end within {MAX_PAGES} pages")

    def pending_workloads(
        self, *, namespace: str, local_queue: str, limit: int, offset: int
    ) -> list[Manifest]:
        api = self.api_client
        with _classified():
            request = api.param_serialize(
                "GET", PENDING_WORKLOADS,
                path_params={"namespace": namespace, "local_queue": local_queue},
                query_params=[("limit", limit), ("offset", offset)],
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
            response = api.call_api(*request, _request_timeout=self.request_timeout)
            response.read()
            summary = api.response_deserialize(response, {"200": "object"}).data
        items = (summary or {}).get("items") if isinstance(summary, dict) else None
        return [item for item in items or [] if isinstance(item, dict)]

    def patch_node(self, *, name: str, patch: Manifest) -> Manifest:
        resource = self._resource("v1", "Node")
        with _classified():
            result = self.dynamic.patch(
                resource,
                body=patch,
                name=name,
                content_type="application/merge-patch+json",
                _request_timeout=self.request_timeout,
            )
        return _with_type(result.to_dict(), "v1", "Node")

    def evict_pod(self, *, name: str, namespace: str) -> None:
        body = client.V1Eviction(
            api_version="policy/v1",
            kind="Eviction",
            metadata=client.V1ObjectMeta(name=name, namespace=namespace),
        )
        try:
            with _classified():
                client.CoreV1Api(self.api_client).create_namespaced_pod_eviction(
                    name=name, namespace=namespace, body=body, _request_timeout=self.request_timeout
                )
        except PermanentFleetError as exc:
            if exc.status != 404:  # the Pod is already gone: what the eviction wanted
                raise


def _with_type(obj: dict[str, Any], api_version: str, kind: str) -> Manifest:
    # A real API server leaves apiVersion/kind out of the items of built-in lists.
    obj.setdefault("apiVersion", api_version)
    obj.setdefault("kind", kind)
    return obj
