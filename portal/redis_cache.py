"""The cache on Redis, failing open: a Redis outage is a cache miss, never a 500.

The cache holds only what can be recomputed or done without: the API's throttle counters, the
OIDC discovery document and signing keys, verified bearer tokens, table stamps and the cost
explorer's figures. While Redis cannot be reached every read is a miss (the throttle then lets
requests through, the rest recompute) and every write is dropped, each logged as a warning;
/readyz reports the cache as degraded. Production selects it with CACHE_URL=rediscache://…
(settings swap Django's Redis backend for this one).
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError)


def _unreachable(operation: str, exc: BaseException) -> None:
    logger.warning("Cache unreachable (%s: %s): %s treated as a miss", type(exc).__name__,
                   exc, operation)


class FailOpenRedisCacheClient(RedisCacheClient):
    """Django's Redis client, answering as an empty cache while Redis cannot be reached."""

    def add(self, key, value, timeout) -> bool:
        try:
            return super().add(key, value, timeout)
        except UNREACHABLE as exc:
            _unreachable("add", exc)
            return False

    def get(self, key, default) -> Any:
        try:
            return super().get(key, default)
        except UNREACHABLE as exc:
            _unreachable("get", exc)
            return default

    def set(self, key, value, timeout) -> None:
        try:
            super().set(key, value, timeout)
        except UNREACHABLE as exc:
            _unreachable("set", exc)

    def touch(self, key, timeout) -> bool:
        try:
            return super().touch(key, timeout)
        except UNREACHABLE as exc:
            _unreachable("touch", exc)
            return False

    def delete(self, key) -> bool:
        try:
            return super().delete(key)
        except UNREACHABLE as exc:
            _unreachable("delete", exc)
            return False

    def get_many(self, keys) -> dict:
        try:
            return super().get_many(keys)
        except UNREACHABLE as exc:
            _unreachable("get_many", exc)
            return {}

    def has_key(self, key) -> bool:
        try:
            return super().has_key(key)
        except UNREACHABLE as exc:
            _unreachable("has_key", exc)
            return False

    def incr(self, key, delta) -> int:
        try:
            return super().incr(key, delta)
        except UNREACHABLE as exc:
            _unreachable("incr", exc)
            raise ValueError(f"Key '{key}' not found (the cache is unreachable).") from exc

    def set_many(self, data, timeout) -> None:
        try:
            super().set_many(data, timeout)
        except UNREACHABLE as exc:
            _unreachable("set_many", exc)

    def delete_many(self, keys) -> None:
        try:
            super().delete_many(keys)
        except UNREACHABLE as exc:
            _unreachable("delete_many", exc)

    def clear(self) -> bool:
        try:
            return super().clear()
        except UNREACHABLE as exc:
            _unreachable("clear", exc)
            return False


class FailOpenRedisCache(RedisCache):
    """Django's RedisCache on FailOpenRedisCacheClient."""

    def __init__(self, server, params) -> None:
        super().__init__(server, params)
        self._class = FailOpenRedisCacheClient


def cache_ping(cache: Any) -> None:
    """Raise when `cache` (Django's) is a Redis cache that does not answer; /readyz's check."""
    if isinstance(cache, RedisCache):
        cache._cache.get_client(None).ping()
