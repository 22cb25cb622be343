"""An inference endpoint's state, read from its InferenceService and its predictor's pods."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..base import (
    QUEUED_REASON,
    BuildContext,
    Manifest,
    ObjectKey,
    Observation,
    condition,
    queued_by_kueue,
    queued_words,
)
from .spec import INFERENCE_SERVICE, POD, PREDICTOR_LABEL, service_name

# Why a predictor is down when the cluster has given up rather than still working on it:
# Deployment conditions KServe copies in Standard mode, its own reconcile errors, and the
# Knative revision failures of the other mode (in case an admin's defaults ever win).
TERMINAL_REASONS = frozenset(
    {
        "ProgressDeadlineExceeded",
        "FailedCreate",
        "ReconcileFailed",
        "InvalidGPUAllocation",
        "InvalidWorkerSpecNotSet",
        "RevisionFailed",
        "RevisionMissing",
        "ContainerMissing",
        "ContainerError",
        "ImagePullBackOff",
        "ErrImagePull",
        "CrashLoopBackOff",
        "Stopped",
    }
)
# `modelStatus.transitionStatus` values that mean the model will not load as specified.
BLOCKED_TRANSITIONS = frozenset({"BlockedByFailedLoad", "InvalidSpec"})


def _is(cond: Mapping[str, Any] | None, status: str) -> bool:
    return cond is not None and cond.get("status") == status


def _newest_first(obj: Manifest) -> tuple[dict[str, Any], ...]:
    conds = [dict(c) for c in (obj.get("status") or {}).get("conditions") or []]
    return tuple(sorted(conds, key=lambda c: str(c.get("lastTransitionTime") or ""), reverse=True))


def _model_failure(status: Mapping[str, Any]) -> tuple[str, str] | None:
    """KServe's verdict that the model will not load (storage initializer or vLLM failing)."""
    model = status.get("modelStatus") or {}
    if model.get("transitionStatus") not in BLOCKED_TRANSITIONS:
        return None
    info = model.get("lastFailureInfo") or {}
    message = info.get("message") or ""
    if info.get("exitCode"):
        message = f"{message} (exit code {info['exitCode']})".strip()
    return info.get("reason") or model["transitionStatus"], message


def _terminal(reason: str) -> bool:
    return reason in TERMINAL_REASONS or reason.startswith("ExitCode")


def _down(obj: Manifest) -> tuple[str, str, bool]:
    """Reason, message and whether the cluster gave up, for an InferenceService not Ready."""
    for kind in ("PredictorReady", "Ready", "IngressReady"):
        cond = condition(obj, kind)
        if cond is not None and cond.get("status") != "True":
            reason = cond.get("reason") or "NotReady"
            terminal = cond.get("status") == "False" and _terminal(reason)
            return reason, cond.get("message") or "", terminal
    return "Progressing", "Waiting for KServe to reconcile it.", False


def _unschedulable(objects: Mapping[ObjectKey, Manifest], name: str) -> tuple[int, str]:
    """How many of the predictor's pods the scheduler left Pending, and its words for one."""
    count, words = 0, ""
    for (api_version, kind, _), pod in objects.items():
        if (api_version, kind) != POD:
            continue
        if ((pod.get("metadata") or {}).get("labels") or {}).get(PREDICTOR_LABEL) != name:
            continue
        scheduled = condition(pod, "PodScheduled") or {}
        if scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
            count += 1
            words = words or str(scheduled.get("message") or "")
    return count, words


def _queued(objects: Mapping[ObjectKey, Manifest], name: str) -> int:
    """How many of the predictor's pods Kueue still holds in the tenant's queue."""
    return sum(
        1 for (api_version, kind, _), pod in objects.items()
        if (api_version, kind) == POD
        and ((pod.get("metadata") or {}).get("labels") or {}).get(PREDICTOR_LABEL) == name
        and queued_by_kueue(pod)
    )


def _was_serving(status: Mapping[str, Any]) -> bool:
    """What KServe keeps after readiness is lost: the model loaded once, the predictor had a URL."""
    states = (status.get("modelStatus") or {}).get("states") or {}
    predictor = (status.get("components") or {}).get("predictor") or {}
    return states.get("activeModelState") == "Loaded" or bool(predictor.get("url"))


def _details(obj: Manifest | None, spec: Mapping[str, Any], name: str) -> dict[str, Any]:
    details: dict[str, Any] = {
        "model": name,
        "replicas_min": spec.get("min_replicas"),
        "replicas_max": spec.get("max_replicas"),
    }
    if obj is None:
        return details
    status = obj.get("status") or {}
    model = status.get("modelStatus") or {}
    predictor = (status.get("components") or {}).get("predictor") or {}
    figures = {
        "url": status.get("url"),
        "cluster_url": (status.get("address") or {}).get("url"),
        "replicas_ready": (model.get("copies") or {}).get("totalCopies"),
        "failed_copies": (model.get("copies") or {}).get("failedCopies"),
        "model_state": (model.get("states") or {}).get("activeModelState"),
        "transition": model.get("transitionStatus"),
        "predictor_revision": predictor.get("latestReadyRevision")
        or predictor.get("latestCreatedRevision"),
        "traffic_percent": next(
            (t.get("percent") for t in predictor.get("traffic") or [] if t.get("latestRevision")),
            None,
        ),
        "deployment_mode": status.get("deploymentMode"),
        "runtime": status.get("clusterServingRuntimeName") or status.get("servingRuntimeName"),
    }
    details.update({k: v for k, v in figures.items() if v not in (None, "")})
    return details


def observe(
    objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
) -> Observation:
    """The endpoint's state from its InferenceService and its predictor's pods."""
    name = service_name(ctx.name)
    obj = objects.get((*INFERENCE_SERVICE, name))
    details = _details(obj, spec, name)
    if obj is None:
        return Observation("absent", details=details)
    status = obj.get("status") or {}
    waiting, words = _unschedulable(objects, name)
    if waiting:
        details["replicas_waiting_for_a_node"] = waiting
    queued = _queued(objects, name)
    if queued:
        details["replicas_queued"] = queued
    found = {"conditions": _newest_first(obj), "details": details}
    failed_model = _model_failure(status)
    if waiting and not failed_model:
        # Replicas beyond the capacity it may use: Pending until room frees up, in the
        # scheduler's words (it retries; nothing is to fix but the size or the fleet).
        return Observation("degraded", "Unschedulable", words, **found)
    if queued and not failed_model and not _is(condition(obj, "Ready"), "True"):
        # Fair share at work, not a fault: Kueue admits them as quota frees up.
        return Observation("progressing", QUEUED_REASON, queued_words(queued, "replica"), **found)
    if _is(condition(obj, "Ready"), "True"):
        if failed_model:  # the old replicas still serve; the new spec's model won't load
            return Observation("degraded", *failed_model, **found)
        ready = condition(obj, "Ready") or {}
        return Observation("ready", ready.get("reason", ""), ready.get("message", ""), **found)
    reason, message, terminal = _down(obj)
    if failed_model:
        (reason, message), terminal = failed_model, True
    if _was_serving(status):
        return Observation("degraded", reason, message, **found)
    if terminal:
        return Observation("failed", reason, message, **found)
    return Observation("progressing", reason, message, **found)
