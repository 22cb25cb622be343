"""Checks several kinds run on a user's spec: its shape, booleans, a GPU class the tenant may
use, and the collection of every field's errors into one SpecError (a form shows them all at
once instead of one per submit)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from inventory import resource_classes

from .base import GpuOffer, LaunchContext, SpecError, whole

T = TypeVar("T")
_TRUE = frozenset({"true", "on", "yes", "1"})
_FALSE = frozenset({"false", "off", "no", "0"})


class FieldErrors:
    """Gathers the SpecErrors of several checks; `raise_if_any()` raises them as one."""

    def __init__(self) -> None:
        self.fields: dict[str, list[str]] = {}

    def add(self, field_name: str, message: str) -> None:
        self.fields.setdefault(field_name, []).append(message)

    def check(self, check: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
        """`check(*args, **kwargs)`, or None after recording the SpecError it raised."""
        try:
            return check(*args, **kwargs)
        except SpecError as exc:
            for name, messages in exc.fields.items():
                self.fields.setdefault(name, []).extend(messages)
            return None

    def raise_if_any(self) -> None:
        if self.fields:
            raise SpecError(self.fields)


def as_mapping(spec: Any) -> Mapping[str, Any]:
    """The spec if it is a mapping with string keys; SpecError otherwise."""
    if not isinstance(spec, Mapping):
        raise SpecError({"__all__": ["The spec must be an object of fields."]})
    if not all(isinstance(key, str) for key in spec):
        raise SpecError({"__all__": ["Field names must be text."]})
    return spec


def refuse_unknown(spec: Mapping[str, Any], known: frozenset[str], errors: FieldErrors) -> None:
    # A misspelt field would otherwise be dropped silently and its default used instead.
    for name in sorted(set(spec) - known):
        errors.add(name[:100], "Unknown field.")


def boolean(value: Any, *, field_name: str, default: bool) -> bool:
    """A bool from JSON (true/false) or a form ("on", "false", …); None or "" mean `default`."""
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise SpecError({field_name: ["Yes or no (true or false)."]})


def gpu_offer(
    value: Any,
    ctx: LaunchContext,
    *,
    field_name: str = "gpu",
    allow: frozenset[str] = frozenset({"gpu"}),
    refused: Mapping[str, str] | None = None,
) -> tuple[resource_classes.ResourceClass, GpuOffer]:
    """The resource class and the pool's offer of a GPU class the tenant may launch with.

    `allow` lists the vocabulary kinds (gpu, mig, hami) this workload can use; `refused` says
    per other kind why not. MIG and HAMi are refused to dedicated tenants even when allowed.
    """
    if not isinstance(value, str) or not value.strip():
        raise SpecError({field_name: ["Pick a GPU class of your pool."]})
    try:
        resource_class = resource_classes.parse(value.strip())
    except resource_classes.UnknownResourceClass:
        raise SpecError({field_name: ["Not a GPU class this portal knows."]}) from None
    if resource_class.kind not in {"gpu", "mig", "hami"}:
        raise SpecError({field_name: ["Not a GPU class: pick a GPU model or a partition."]})
    if resource_class.kind not in allow:
        reason = (refused or {}).get(resource_class.kind, "This workload cannot use it.")
        raise SpecError({field_name: [reason]})
    if resource_class.kind != "gpu" and not ctx.partitions_allowed:
        raise SpecError(
            {
                field_name: [
                    "Dedicated tenants get whole GPUs only: MIG partitions and HAMi shares are "
                    "shared inside one trust domain."
                ]
            }
        )
    offer = ctx.offer(resource_class.key)
    if offer is None:
        raise SpecError({field_name: [f"Your pool has no {resource_class.label}."]})
    if ctx.quota.get(resource_class.key, 0) <= 0:
        raise SpecError(
            {field_name: [f"Your quota holds no {resource_class.label}: request some first."]}
        )
    return resource_class, offer


def count_per_node(
    value: Any, offer: GpuOffer, *, field_name: str, default: int = 1, minimum: int = 1
) -> int:
    """How many of an offer's GPUs (or partitions) one pod gets: `minimum`..the largest node's
    count."""
    if value is None:
        value = default
    amount = whole(value, field_name=field_name, minimum=minimum)
    if amount > offer.max_per_node:
        raise SpecError(
            {
                field_name: [
                    f"At most {offer.max_per_node}: no node of your pool has more "
                    f"{offer.label} than that."
                ]
            }
        )
    return amount
