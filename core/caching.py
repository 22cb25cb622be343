"""Every value the portal keeps in Django's cache, named once here, with its hits and misses.

The cache is Django's own (`CACHES["default"]`): Redis in production, shared by every worker;
local memory in development, bounded by its MAX_ENTRIES. No process keeps values of its own.
Each value is kept under a key that says what it was computed from (the data stamps of its
tables, a range's usage stamp, a fingerprint, a token's digest), so nothing is ever evicted by
hand: a change makes a new key and the old one expires. Reads are counted per name in
`portal_cache_requests_total{cache, result}` (hit or miss).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.core.cache import cache
from prometheus_client import Counter

# name -> what is kept under it (docs/architecture.md lists them as well).
CACHED: dict[str, str] = {
    "node-list": "the node list's row count, reserving tenants and sites, under the node tables' "
    "stamps",
    "node-detail": "a node's page, under the stamps of the tables it shows",
    "fleet-overview": "each part of the admin's fleet overview, under its tables' stamps",
    "api-count": "a list API's row count for one filter, under its tables' stamps",
    "usage-explorer": "the usage explorer's summary and each page of its table, under its "
    "range's usage stamp",
    "fleet-utilization": "one closed day's utilization per tenant, under a fingerprint of its "
    "daily sums and metering windows",
    "oidc-discovery": "Keycloak's discovery document",
    "oidc-jwks": "Keycloak's signing keys",
    "oidc-jwks-refetch": "a marker that the signing keys were fetched again for an unknown key id "
    "(at most one such fetch a minute, across every worker)",
    "oidc-introspection": "Keycloak's introspection answer for a bearer token (opaque, or a JWT "
    "when OIDC_INTROSPECT_ACCESS_TOKENS), under the token's digest, for at most "
    "OIDC_INTROSPECTION_CACHE_SECONDS and never past the token's expiry",
    "oidc-bearer": "the user a verified bearer access token names, until the token expires",
}

REQUESTS = Counter(
    "portal_cache_requests",
    "Reads of values the portal keeps in Django's cache, by name and result (hit or miss).",
    ["cache", "result"],
)


def key(name: str, *parts: object) -> str:
    """The cache key of `parts` under `name` (which must be one of CACHED)."""
    if name not in CACHED:
        raise ValueError(f"Not a named cache (core.caching.CACHED): {name}")
    return ":".join([name, *(str(part) for part in parts)])


def _check(name: str, keys: Iterable[str]) -> None:
    if name not in CACHED or any(not k.startswith(f"{name}:") for k in keys):
        raise ValueError(f"Keys of {name!r} are made by core.caching.key({name!r}, ...)")


def _count(name: str, hits: int, misses: int) -> None:
    if hits:
        REQUESTS.labels(name, "hit").inc(hits)
    if misses:
        REQUESTS.labels(name, "miss").inc(misses)


def get(name: str, cache_key: str, default: Any = None) -> Any:
    _check(name, [cache_key])
    missing = object()
    value = cache.get(cache_key, missing)
    _count(name, value is not missing, value is missing)
    return default if value is missing else value


def get_many(name: str, keys: Iterable[str]) -> dict[str, Any]:
    keys = list(keys)
    _check(name, keys)
    found = cache.get_many(keys) if keys else {}
    _count(name, len(found), len(keys) - len(found))
    return found


def set(name: str, cache_key: str, value: Any, timeout: int) -> None:
    _check(name, [cache_key])
    cache.set(cache_key, value, timeout)


def set_many(name: str, values: Mapping[str, Any], timeout: int) -> None:
    _check(name, values)
    if values:
        cache.set_many(dict(values), timeout=timeout)


def add(name: str, cache_key: str, value: Any, timeout: int) -> bool:
    """Set `cache_key` only if absent; True if this call set it (a lock or rate limit)."""
    _check(name, [cache_key])
    return cache.add(cache_key, value, timeout)


def delete(name: str, cache_key: str) -> None:
    _check(name, [cache_key])
    cache.delete(cache_key)
