"""The values kept in Django's cache: named in one module, counted, and bounded in memory."""

import pickle

import pytest
from django.core.cache import cache, caches
from django.core.cache.backends.locmem import LocMemCache
from prometheus_client import REGISTRY

from core import caching
from core.stamps import read_stamps, stamped
from tests.factories import NodeFactory

pytestmark = pytest.mark.django_db(transaction=True)  # stamps count committed writes


@pytest.fixture(autouse=True)
def _empty_cache():
    cache.clear()
    yield
    cache.clear()


def _count(name: str, result: str) -> float:
    return REGISTRY.get_sample_value(
        "portal_cache_requests_total", {"cache": name, "result": result}
    ) or 0.0


def test_a_value_under_a_name_not_declared_is_refused():
    with pytest.raises(ValueError, match="Not a named cache"):
        caching.key("my-private-memo", "x")
    with pytest.raises(ValueError, match="Not a named cache"):
        stamped("my-private-memo:x", ["inventory_node"], lambda: 1, stamps=read_stamps())


def test_a_key_made_under_one_name_is_not_read_or_written_under_another():
    key = caching.key("node-list", "count")
    with pytest.raises(ValueError, match=r"made by core\.caching\.key"):
        caching.get("node-detail", key)
    with pytest.raises(ValueError, match=r"made by core\.caching\.key"):
        caching.set_many("api-count", {key: 1}, timeout=60)


def test_hits_and_misses_are_counted_per_name_for_prometheus():
    misses, hits = _count("node-detail", "miss"), _count("node-detail", "hit")
    NodeFactory()
    for _ in range(3):
        stamped("node-detail:test", ["inventory_node"], lambda: "a page", stamps=read_stamps())
    assert _count("node-detail", "miss") == misses + 1
    assert _count("node-detail", "hit") == hits + 2
    NodeFactory()  # a new version of the table: a new key, a miss
    stamped("node-detail:test", ["inventory_node"], lambda: "a page", stamps=read_stamps())
    assert _count("node-detail", "miss") == misses + 2


def test_the_development_cache_holds_at_most_its_max_entries_whatever_is_asked():
    """Local memory (the demo's and development's cache) culls past MAX_ENTRIES: a flood of
    distinct keys (filters, ranges, pages) cannot grow a process past entries times size."""
    backend = caches["default"]
    if not isinstance(backend, LocMemCache):
        pytest.skip("production's Redis is bounded by its own maxmemory")
    limit = backend._max_entries
    value = ["row"] * 1000
    for n in range(limit * 2):
        stamped("api-count:flood", ["inventory_node"], lambda: value, stamps=read_stamps(),
                extra=n)
    assert len(backend._cache) <= limit
    largest = len(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))
    assert sum(len(v) for v in backend._cache.values()) <= limit * largest


def test_every_name_says_what_it_keeps():
    assert all(len(what) > 20 for what in caching.CACHED.values())
    assert all(name == name.lower() and " " not in name for name in caching.CACHED)
