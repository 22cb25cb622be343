"""Shared shorthand for billing tests: UTC instants and usage buckets from allocations."""

from datetime import UTC, datetime

from billing.calculations import UsageAmount


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0):
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def as_usage(buckets: dict) -> list[UsageAmount]:
    return [UsageAmount(resource, hour, seconds) for (hour, resource), seconds in buckets.items()]
