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
from collections.abc import Callable
from typing import Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError)


def _fail_open(operation: str, missing: Callable[[], Any]):
    """Django's client method `operation`, answering `missing()` (and logging a warning) when
    Redis cannot be reached."""

    def method(self, *args, **kwargs):
        try:
            return getattr(super(FailOpenRedisCacheClient, self), operation)(*args, **kwargs)
        except UNREACHABLE as exc:
            logger.warning("Cache unreachable (%s: %s): %s treated as a miss",
                           type(exc).__name__, exc, operation)
            return missing(*args)

    method.__name__ = operation
    return method


def _not_found(key, *args) -> int:
    raise ValueError(f"Key '{key}' not found (the cache is unreachable).")


class FailOpenRedisCacheClient(RedisCacheClient):
    """Django's Redis client, answering as an empty cache while Redis cannot be reached: every
    read a miss, every write dropped; incr says the key is missing, as Django's does."""

    add = _fail_open("add", lambda *args: False)
    get = _fail_open("get", lambda key, default: default)
    set = _fail_open("set", lambda *args: None)
    touch = _fail_open("touch", lambda *args: False)
    delete = _fail_open("delete", lambda *args: False)
    get_many = _fail_open("get_many", lambda *args: {})
    has_key = _fail_open("has_key", lambda *args: False)
    incr = _fail_open("incr", _not_found)
    set_many = _fail_open("set_many", lambda *args: None)
    delete_many = _fail_open("delete_many", lambda *args: None)
    clear = _fail_open("clear", lambda *args: False)


class FailOpenRedisCache(RedisCache):
    """Django's RedisCache on FailOpenRedisCacheClient."""

    def __init__(self, server, params) -> None:
        super().__init__(server, params)
        self._class = FailOpenRedisCacheClient


def cache_ping(cache: Any) -> None:
    """Raise when `cache` (Django's) is a Redis cache that does not answer; /readyz's check."""
    if isinstance(cache, RedisCache):
        cache._cache.get_client(None).ping()
