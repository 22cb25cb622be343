"""Allocation metering: unit-seconds per UTC hour and class, split exactly on the hour."""

from datetime import timedelta, timezone

import pytest

from billing.calculations import Allocation, allocated_seconds, allocation_history

from .timeline import utc

H200 = "gpu:nvidia-h200"
L40S = "gpu:nvidia-l40s"


def test_partial_hours_count_their_seconds():
    allocation = Allocation(
        start=utc(2025, 3, 3, 10, 15), end=utc(2025, 3, 3, 12, 30), demand={H200: 2}
    )

    buckets = allocated_seconds(
        [allocation], window_start=utc(2025, 3, 1), window_end=utc(2025, 4, 1)
    )

    assert buckets == {
        (utc(2025, 3, 3, 10), H200): 45 * 60 * 2,  # 10:15-11:00 = 2 700 s x 2 GPUs = 5 400
        (utc(2025, 3, 3, 11), H200): 3600 * 2,  # a whole hour x 2 = 7 200
        (utc(2025, 3, 3, 12), H200): 30 * 60 * 2,  # 12:00-12:30 = 1 800 s x 2 = 3 600
    }
    assert sum(buckets.values()) == int(2.25 * 3600) * 2  # 2 h 15 min x 2 GPUs = 16 200


def test_a_scale_change_mid_hour_starts_a_new_interval():
    history = allocation_history(
        [
            (utc(2025, 3, 3, 9, 0), {H200: 1, "cpu": 8}),  # ready
            (utc(2025, 3, 3, 9, 20), {H200: 4, "cpu": 8}),  # scaled up at 09:20
        ],
        ended_at=utc(2025, 3, 3, 10, 10),  # deleted
    )

    buckets = allocated_seconds(history, window_start=utc(2025, 3, 1), window_end=utc(2025, 4, 1))

    assert buckets == {
        # 09:00-09:20 one GPU (1 200 s x 1) + 09:20-10:00 four GPUs (2 400 s x 4 = 9 600)
        (utc(2025, 3, 3, 9), H200): 1200 + 9600,
        (utc(2025, 3, 3, 10), H200): 600 * 4,  # 10:00-10:10 four GPUs = 2 400
        (utc(2025, 3, 3, 9), "cpu"): 3600 * 8,  # eight vCPUs throughout = 28 800
        (utc(2025, 3, 3, 10), "cpu"): 600 * 8,  # = 4 800
    }


def test_a_stopped_vm_holds_only_its_disk_and_an_open_interval_ends_at_the_window():
    history = allocation_history(
        [
            (utc(2025, 3, 3, 0), {L40S: 1, "storage-gib": 100}),  # running
            (utc(2025, 3, 3, 2), {"storage-gib": 100}),  # stopped: the disk stays
        ]
    )

    buckets = allocated_seconds(
        history, window_start=utc(2025, 3, 3), window_end=utc(2025, 3, 3, 4)
    )

    assert {key: s for key, s in buckets.items() if key[1] == L40S} == {
        (utc(2025, 3, 3, 0), L40S): 3600,
        (utc(2025, 3, 3, 1), L40S): 3600,
    }
    # 100 GiB for each of the four hours up to the window's end = 360 000 GiB-seconds an hour
    assert [buckets[utc(2025, 3, 3, h), "storage-gib"] for h in range(4)] == [360_000] * 4
    assert len(buckets) == 6


def test_a_workload_spanning_two_months_is_cut_at_the_month_boundary():
    allocation = Allocation(
        start=utc(2025, 3, 31, 23, 30), end=utc(2025, 4, 1, 0, 45), demand={H200: 1}
    )

    march = allocated_seconds(
        [allocation], window_start=utc(2025, 3, 1), window_end=utc(2025, 4, 1)
    )
    april = allocated_seconds(
        [allocation], window_start=utc(2025, 4, 1), window_end=utc(2025, 5, 1)
    )

    assert march == {(utc(2025, 3, 31, 23), H200): 1800}  # 23:30-24:00
    assert april == {(utc(2025, 4, 1, 0), H200): 2700}  # 00:00-00:45
    assert sum(march.values()) + sum(april.values()) == 75 * 60  # 1 h 15 min, nothing lost


def test_hours_are_utc_hours_whatever_the_offset_given():
    india = timezone(timedelta(hours=5, minutes=30))
    # 10:30 in India is 05:00 UTC, a whole hour; 12:00 India is 06:30 UTC.
    allocation = Allocation(
        start=utc(2025, 3, 3, 5).astimezone(india),
        end=utc(2025, 3, 3, 6, 30).astimezone(india),
        demand={"cpu": 1},
    )

    buckets = allocated_seconds(
        [allocation], window_start=utc(2025, 3, 3), window_end=utc(2025, 3, 4)
    )

    assert buckets == {(utc(2025, 3, 3, 5), "cpu"): 3600, (utc(2025, 3, 3, 6), "cpu"): 1800}
    assert all(hour.utcoffset() == timedelta(0) for hour, _ in buckets)


def test_zero_units_and_intervals_outside_the_window_give_no_bucket():
    allocations = [
        Allocation(start=utc(2025, 2, 1), end=utc(2025, 2, 2), demand={"cpu": 4}),
        Allocation(start=utc(2025, 3, 2), end=utc(2025, 3, 3), demand={"cpu": 0}),
    ]

    assert (
        allocated_seconds(allocations, window_start=utc(2025, 3, 1), window_end=utc(2025, 4, 1))
        == {}
    )


def test_any_resource_class_key_is_metered_even_one_the_vocabulary_does_not_know_yet():
    share = "hami-core:nvidia-h100-80gb"
    allocation = Allocation(start=utc(2025, 3, 3, 10), end=utc(2025, 3, 3, 11), demand={share: 30})

    buckets = allocated_seconds(
        [allocation], window_start=utc(2025, 3, 3), window_end=utc(2025, 3, 4)
    )

    assert buckets == {(utc(2025, 3, 3, 10), share): 3600 * 30}


def test_naive_datetimes_are_refused():
    naive = utc(2025, 3, 3).replace(tzinfo=None)
    with pytest.raises(ValueError, match="timezone-aware"):
        Allocation(start=naive, end=None, demand={"cpu": 1})
    allocation = Allocation(start=utc(2025, 3, 3), end=None, demand={"cpu": 1})
    with pytest.raises(ValueError, match="window_end must be timezone-aware"):
        allocated_seconds([allocation], window_start=utc(2025, 3, 1), window_end=naive)


@pytest.mark.parametrize(
    ("end", "demand", "message"),
    [
        (utc(2025, 3, 2), {"cpu": 1}, "ends .* before it starts"),
        (None, {"cpu": -1}, "whole number"),
        (None, {"cpu": 1.5}, "whole number"),
        (None, {"": 1}, "non-empty string"),
    ],
)
def test_impossible_allocations_are_refused(end, demand, message):
    with pytest.raises(ValueError, match=message):
        Allocation(start=utc(2025, 3, 3), end=end, demand=demand)


def test_an_allocation_cannot_be_changed_after_the_fact():
    demand = {"cpu": 2}
    allocation = Allocation(start=utc(2025, 3, 3), end=None, demand=demand)
    demand["cpu"] = 200

    assert allocation.demand["cpu"] == 2
    with pytest.raises(TypeError):
        allocation.demand["cpu"] = 3
