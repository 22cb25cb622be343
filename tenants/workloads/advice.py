"""What a person can do about a failed workload, by what the cluster said caused it. Pure.

The cluster's words say what went wrong; the advice says which of the page's actions fixes it:
a model that is not at its URI is fixed by a new endpoint with the right URI (the URI is fixed
for a running endpoint, so resizing does nothing), a pod no node has room for by asking for
less (scale or resize), a missing image by relaunching with one that exists.
"""

from __future__ import annotations

# KServe's words for a model that will not load as specified.
MODEL_REASONS = frozenset({"ModelLoadFailed", "BlockedByFailedLoad", "InvalidSpec"})
# The storage initializer's words (huggingface_hub's, botocore's) for a model it may not read.
CREDENTIAL_REFUSALS = ("Cannot access gated repo", "Unable to locate credentials",
                       "401 Client Error", "AccessDenied")
# The scheduler's (and KubeVirt's) words for a pod no node takes.
UNSCHEDULABLE_REASONS = frozenset({"Unschedulable", "ErrorUnschedulable", "FailedScheduling"})
IMAGE_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName"})
CRASH_REASONS = frozenset({"CrashLoopBackOff", "CreateContainerError", "ContainerError"})

RESIZE = "resize"
RELAUNCH = "relaunch"
DELETE = "delete"


def failure_advice(*, kind: str, reason: str, message: str, scalable: bool) -> tuple[str, str]:
    """(what to do, which action does it: resize | relaunch | delete) for a failed workload."""
    if kind == "inference" and any(words in message for words in CREDENTIAL_REFUSALS):
        return (
            "The model needs a credential: a gated Hugging Face model a token of an account "
            "that accepted its terms, a private bucket an S3 access key. Store it on your "
            "tenant's Credentials page, then launch the endpoint again picking it (or give "
            "this one the credential over the API's scale).",
            RELAUNCH,
        )
    if reason in MODEL_REASONS or (kind == "inference" and "Repository Not Found" in message):
        return (
            "The model could not be loaded from its model URI. Resizing or scaling will not "
            "help: a running endpoint's model URI cannot change. Delete this endpoint and "
            "launch a new one with a model URI that exists (and that the cluster may read).",
            RELAUNCH,
        )
    if reason in UNSCHEDULABLE_REASONS or "nodes are available" in message:
        if scalable:
            return (
                "No node your workloads may use has room for it now. Ask for less below "
                "(fewer GPUs or replicas), delete other workloads, or wait: it starts by itself "
                "once capacity frees up.",
                RESIZE,
            )
        return (
            "No node your workloads may use has room for it now. Delete it and launch a "
            "smaller one, or wait: it starts by itself once capacity frees up.",
            DELETE,
        )
    if reason in IMAGE_REASONS:
        return (
            "The cluster could not pull its image. Delete it and launch it again with an image "
            "that exists and that the cluster may pull.",
            RELAUNCH,
        )
    if reason in CRASH_REASONS:
        return (
            "Its program keeps stopping. Delete it and launch it again once the cause is fixed "
            "(the timeline below has the cluster's messages).",
            RELAUNCH,
        )
    if scalable:
        return (
            "If it asks for more than the cluster can give, resize it below; otherwise delete "
            "it and launch it again.",
            RESIZE,
        )
    return "Delete it and launch it again.", RELAUNCH
