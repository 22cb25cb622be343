"""A running Kubernetes API emulator on 127.0.0.1, driven from synchronous test code.

`KubeEmulator` runs `PortalKubeEmulator` (kube_api.py) in a background thread with its own event
loop, so synchronous code (the portal's gateway, Celery tasks run eagerly) talks to it with the
official client over real HTTP. Tests seed objects the cluster itself would own (Nodes, Pods),
read what the portal stored, inspect the requests, and inject faults and delays.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kmock
import requests
from kubernetes import client

from .kube_api import PortalKubeEmulator, merge_patch, status_body
from .kube_validation import warm_up

__all__ = [
    "KubeEmulator", "PortalKubeEmulator", "SeenCall", "SeenRequest", "running_kube_emulator",
]


def _matches(request: kmock.Request, method: str, path: str | re.Pattern[str]) -> bool:
    actual = request.url.path
    hit = path.fullmatch(actual) if isinstance(path, re.Pattern) else actual == path
    return request.method == method.upper() and bool(hit)


@dataclass(frozen=True)
class SeenRequest:
    """What the emulator received: for assertions on the wire traffic."""

    method: str
    path: str
    params: dict[str, str]
    content_type: str
    data: Any


@dataclass(frozen=True)
class SeenCall:
    """One request as the API server's authorizer sees it: method, path, query, and whether it
    created an object (server-side apply that creates is also authorized as `create`)."""

    method: str
    path: str
    params: dict[str, str]
    created: bool
    data: Any = None
    agent: str = ""  # User-Agent: the kubernetes client's, or a test playing a controller


class KubeEmulator:
    """A running `PortalKubeEmulator` on 127.0.0.1:<free port>, driven from synchronous code."""

    def __init__(self) -> None:
        self.url = ""
        self.handler: PortalKubeEmulator | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._closed = threading.Event()
        self._commands: asyncio.Queue[str] | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="kube-emulator", daemon=True)

    def start(self) -> KubeEmulator:
        warm_up()
        self._thread.start()
        if not self._ready.wait(timeout=10) or self._error is not None:
            raise RuntimeError("the Kubernetes emulator did not start") from self._error
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return  # stopped already (a test stops a cluster; its fixture stops it again)
        if self._loop is not None and self._commands is not None:
            self._loop.call_soon_threadsafe(self._commands.put_nowait, "stop")
        self._thread.join(timeout=10)

    def down(self) -> None:
        """Close the port, as a cluster whose API server is gone (connections are refused);
        what it stores is kept for `up()`."""
        assert self._loop is not None and self._commands is not None
        self._closed.clear()
        self._loop.call_soon_threadsafe(self._commands.put_nowait, "down")
        if not self._closed.wait(timeout=10):
            raise RuntimeError("the Kubernetes emulator did not go down")

    def up(self) -> None:
        """Serve again on the same port, with what it stored before `down()`."""
        assert self._loop is not None and self._commands is not None
        self._ready.clear()
        self._loop.call_soon_threadsafe(self._commands.put_nowait, "up")
        if not self._ready.wait(timeout=10) or self._error is not None:
            raise RuntimeError("the Kubernetes emulator did not come back") from self._error

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:
            self._error = exc
            self._ready.set()

    async def _serve(self) -> None:
        self._loop, self._commands = asyncio.get_running_loop(), asyncio.Queue()
        handler = PortalKubeEmulator()
        port = None
        async with handler:
            while True:
                async with kmock.Server(handler, port=port) as server:
                    self.handler, self.url = handler, str(server.url).rstrip("/")
                    port = server.url.port
                    self._ready.set()
                    command = await self._commands.get()
                self._closed.set()
                if command == "stop":
                    return
                while command != "up":  # down until brought up (or stopped)
                    command = await self._commands.get()
                    if command == "stop":
                        return

    def _in_loop(self, fn: Callable[[], Any]) -> Any:
        async def call() -> Any:
            return fn()

        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(call(), self._loop).result(timeout=10)

    def api_client(self, *, retries: int = 0) -> client.ApiClient:
        """An ApiClient for this emulator; no retries, so that faults surface at once."""
        configuration = client.Configuration(host=self.url)
        configuration.retries = retries
        return client.ApiClient(configuration)

    def write_kubeconfig(self, path: Path) -> Path:
        """A kubeconfig for this emulator, for a process of its own (a Celery worker)."""
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "emulator", "cluster": {"server": self.url}}],
                    "users": [{"name": "portal", "user": {"token": "emulator"}}],
                    "contexts": [
                        {"name": "emulator", "context": {"cluster": "emulator", "user": "portal"}}
                    ],
                    "current-context": "emulator",
                }
            )
        )
        return path

    def _resource_of(self, api_version: str, kind: str) -> kmock.resource:
        assert self.handler is not None
        group, _, version = api_version.rpartition("/")
        for resource in self.handler.resources:
            info = self.handler.resources[resource]
            if (resource.group, resource.version, info.kind) == (group, version, kind):
                return resource
        raise LookupError(f"the emulator serves no {api_version} {kind}")

    def put_object(self, body: dict[str, Any]) -> dict[str, Any]:
        """Store an object as the cluster's own components would (e.g. a Node from kubelet)."""
        handler = self.handler
        assert handler is not None
        resource = self._resource_of(body["apiVersion"], body["kind"])
        meta = body["metadata"]
        namespace = meta.get("namespace") if handler.resources[resource].namespaced else None
        # Checked as a strict write: a fixture's typo fails here instead of vanishing.
        request = kmock.Request(
            resource=resource, namespace=namespace, name=meta["name"], data=body,
            params={"fieldValidation": "Strict"},
        )

        def store() -> dict[str, Any]:
            key = (resource, namespace, meta["name"])
            previous = (
                handler.objects[key].raw
                if (key in handler.objects and not handler.objects[key].deleted)
                else None
            )
            stamped = handler.stamp(request, handler._admitted(request, body, previous), previous)
            handler.objects[key] = stamped
            return stamped

        return self._in_loop(store)

    def patch_object(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        patch: dict[str, Any],
    ) -> dict[str, Any]:
        """Merge `patch` into a stored object, e.g. to play its controller writing `status`."""
        current = self.get_object(api_version, kind, name, namespace)
        if current is None:
            raise LookupError(f"no {kind} {namespace or ''}/{name} in the emulator")
        return self.put_object(merge_patch(current, patch))

    def delete_object(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> None:
        """Delete an object over the API, as its controller would (e.g. KubeVirt removing a
        stopped VM's instance)."""
        resource = self._resource_of(api_version, kind)
        prefix = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        scope = f"/namespaces/{namespace}" if namespace else ""
        response = requests.delete(
            f"{self.url}{prefix}{scope}/{resource.plural}/{name}",
            headers={"Authorization": "Bearer emulator"}, timeout=5,
        )
        response.raise_for_status()

    def register_kind(
        self,
        api_version: str,
        kind: str,
        plural: str,
        *,
        namespaced: bool,
        subresources: tuple[str, ...] = (),
    ) -> None:
        """Serve one more kind in discovery, as installing its CRD would."""
        assert self.handler is not None
        self._in_loop(
            lambda: self.handler.register_kind(
                api_version, kind, plural, namespaced=namespaced, subresources=subresources
            )
        )

    def get_object(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        assert self.handler is not None
        key = (self._resource_of(api_version, kind), namespace, name)
        objects = self.handler.objects

        def read() -> dict[str, Any] | None:
            return None if key not in objects or objects[key].deleted else objects[key].raw

        return self._in_loop(read)

    def list_objects(self, api_version: str, kind: str) -> list[dict[str, Any]]:
        """Every stored object of a kind, read in the emulator's loop (not over HTTP: a
        controller played from here is not counted among the requests)."""
        assert self.handler is not None
        resource = self._resource_of(api_version, kind)
        objects = self.handler.objects

        def read() -> list[dict[str, Any]]:
            return [obj.raw for (res, _, _), obj in objects.items()
                    if res == resource and not obj.deleted]

        return self._in_loop(read)

    def requests(self, method: str | None = None, path: str | None = None) -> list[SeenRequest]:
        assert self.handler is not None
        seen = [
            SeenRequest(
                method=str(r.method.value),
                path=r.url.path,
                params=dict(r.params),
                content_type=next(
                    (v for k, v in r.headers.items() if k.lower() == "content-type"), ""
                ),
                data=r.data,
            )
            for r in self._in_loop(lambda: list(self.handler._requests))
        ]
        return [
            r
            for r in seen
            if (method is None or r.method == method.upper()) and (path is None or r.path == path)
        ]

    @contextmanager
    def recording(self) -> Iterator[list[SeenCall]]:
        """Every request made inside the block, in order, with whether it created an object."""
        calls: list[SeenCall] = []

        def record(request: kmock.Request) -> None:
            headers = {k.lower(): v for k, v in request.headers.items()}
            # The API server asks for `create` too when a server-side apply finds no object.
            applying = "apply-patch" in headers.get("content-type", "")
            created = request.method == "PATCH" and applying and not self.handler.holds(request)
            calls.append(SeenCall(method=str(request.method.value), path=request.url.path,
                                  params=dict(request.params), created=created,
                                  data=request.data, agent=headers.get("user-agent", "")))

        assert self.handler is not None
        self._in_loop(lambda: self.handler.call_hooks.append(record))
        try:
            yield calls
        finally:
            self._in_loop(lambda: self.handler.call_hooks.remove(record))

    def _react(self, method: str, path: str | re.Pattern[str], payload: Any) -> None:
        def register() -> None:
            assert self.handler is not None
            self.handler[lambda request: _matches(request, method, path)] << payload

        self._in_loop(register)

    def fail(
        self,
        status: int,
        *,
        method: str,
        path: str | re.Pattern[str],
        message: str = "injected fault",
        times: int = 1,
        commit: bool = False,
    ) -> None:
        """Answer the next `times` matching requests with `status` and a Status body.

        The change a failed request asked for is not made, unless `commit` (a server that
        stores the object and then fails to answer, as kmock itself does by default).
        """
        remaining = [times]
        if not commit:
            self.handler.vetoes.append(
                lambda request: remaining[0] > 0 and _matches(request, method, path)
            )

        def answer() -> kmock.Response | type[StopIteration]:
            if remaining[0] <= 0:
                # Not None: kmock keeps the status of the last answer and would send it again.
                return StopIteration  # kmock retires this reaction and serves normally
            remaining[0] -= 1
            return kmock.Response(status=status, payload=status_body(status, "Injected", message))

        self._react(method, path, answer)

    def delay(
        self, seconds: float, *, method: str, path: str | re.Pattern[str], times: int = 1
    ) -> None:
        """Hold the next `times` matching requests for `seconds` before serving them."""
        remaining = [times]

        async def pause() -> type[StopIteration] | None:
            if remaining[0] <= 0:
                return StopIteration  # retired: a reaction answering None would stay forever
            remaining[0] -= 1
            await asyncio.sleep(seconds)
            return None

        self._react(method, path, pause)


@contextmanager
def running_kube_emulator() -> Iterator[KubeEmulator]:
    emulator = KubeEmulator().start()
    try:
        yield emulator
    finally:
        emulator.stop()
