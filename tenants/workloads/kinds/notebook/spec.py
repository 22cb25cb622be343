"""A notebook's spec: its fields, their limits, how a person's spec is read, resized, stopped
and started, and what a notebook holds of each resource class."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..base import LaunchContext, SpecError
from ..gpu_input import (
    HAMI_FIELDS,
    Gpu,
    read_gpu,
    read_gpu_count,
    read_hami_share,
    refuse_hami_fields,
    share_fields,
)
from ..image_references import oci_reference
from ..naming import bounded_label
from ..spec_input import ALL, SpecFields

DEFAULT_CPU = 4
MAX_CPU = 64
DEFAULT_MEMORY_GIB = 16
MAX_MEMORY_GIB = 512
MAX_HOME_GIB = 16384
# When the catalog does not say (the settings NOTEBOOK_HOME_GIB, NOTEBOOK_HOME_ACCESS_MODE).
DEFAULT_HOME_GIB = 50
DEFAULT_HOME_ACCESS_MODE = "ReadWriteOnce"
HOME_ACCESS_MODES = ("ReadWriteOnce", "ReadWriteMany", "ReadWriteOncePod")
HOME_PREFIX = "home-"
# A PVC name is a DNS subdomain, but it is also the `home-of` label's value: one label.
MAX_HOME_NAME = 63
HOME_CLAIM = re.compile(r"home-[a-z0-9]([-a-z0-9]*[a-z0-9])?", re.ASCII)
STORAGE_CLASS = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?", re.ASCII)


@dataclass(frozen=True)
class Interface:
    """How an image is started and reached: its arguments (and its entrypoint, where the image's
    own would add flags of its own), where the home volume goes, and the path that answers once
    it serves."""

    key: str
    label: str
    args: tuple[str, ...]
    home: str
    health: str
    command: tuple[str, ...] = ()  # empty: the image's ENTRYPOINT


PORT = 8888
INTERFACES: dict[str, Interface] = {
    i.key: i
    for i in (
        # Jupyter Docker Stacks: `start.sh` runs these as user jovyan (uid 1000, group users
        # 100). No token and no password: only the gateway's sign-in reaches it from outside.
        Interface(
            "jupyterlab", "JupyterLab",
            ("start-notebook.py", "--IdentityProvider.token=", "--ServerApp.password=",
             "--ServerApp.allow_remote_access=True", f"--ServerApp.port={PORT}"),
            "/home/jovyan", "/api",
        ),
        # code-server's image runs as user coder (uid 1000). Its ENTRYPOINT carries flags of
        # its own (`--bind-addr 0.0.0.0:8080 .`), which arguments would only be appended to:
        # the pod names its entrypoint script alone, so these flags are the only ones.
        Interface(
            "code-server", "VS Code (code-server)",
            (f"--bind-addr=0.0.0.0:{PORT}", "--auth=none", "--disable-telemetry", "/home/coder"),
            "/home/coder", "/healthz", command=("/usr/bin/entrypoint.sh",),
        ),
    )
}

GPU_FIELDS = ("gpu", "gpus", *HAMI_FIELDS)
# What a person launching a notebook may give.
LAUNCH_FIELDS = frozenset(
    {
        "image",
        "custom_image",
        "interface",
        "cpu",
        "memory_gib",
        *GPU_FIELDS,
        "running",
        # Resolved by validate: accepted back (and recomputed) so a clean spec validates again.
        "image_ref",
        "image_label",
    }
)
# The home volume: the launching person's, put in by validate, never typed by a person; kept
# when no one launches (a stored spec validated again).
HOME_FIELDS = ("home", "home_gib", "home_access_mode", "home_storage_class")
FIELDS = LAUNCH_FIELDS | frozenset(HOME_FIELDS)
# In form order, as the registry lists them.
SCALABLE = ("cpu", "memory_gib", "gpus", "gpu_memory_gib", "gpu_cores")
POWER_ACTIONS = ("start", "stop")


def home_label(person: str) -> str:
    """A person's username as one DNS label (sanitised, shortened with a digest when needed),
    short enough for `home-` in front."""
    return bounded_label(person, MAX_HOME_NAME - len(HOME_PREFIX), prefix="u")


def home_claim(person: str) -> str:
    """The PVC holding a person's home in a tenant: every notebook they launch mounts it."""
    return HOME_PREFIX + home_label(person)


def _read_image(fields: SpecFields, ctx: LaunchContext) -> tuple[str, str, str, str, str] | None:
    """(catalog key, custom image, resolved reference, interface, label) or None (errors
    recorded): a listed image, or one of one's own where the tenant may run those."""
    key, custom = fields.spec.get("image"), fields.spec.get("custom_image")
    if key not in (None, "") and custom not in (None, ""):
        fields.error("custom_image", "Pick a listed image or give your own, not both.")
        return None
    if custom not in (None, ""):
        if ctx.catalog.get("notebook_custom_images") is not True:
            fields.error("custom_image", "Your tenant runs the listed images only: pick one.")
            return None
        try:
            reference = oci_reference(custom, field_name="custom_image")
        except SpecError as exc:
            fields.error("custom_image", " ".join(exc.fields["custom_image"]))
            return None
        interface = fields.spec.get("interface")
        if interface not in INTERFACES:
            fields.error("interface", f"One of {', '.join(INTERFACES)}: how the image starts.")
            return None
        return "", reference, reference, interface, reference
    catalog = ctx.catalog.get("notebook_images")
    catalog = catalog if isinstance(catalog, Mapping) else {}
    if not isinstance(key, str) or not key:
        fields.error("image", "Pick an image.")
        return None
    if key not in catalog:
        offered = ", ".join(sorted(str(k) for k in catalog)) or "none"
        fields.error("image", f"Not one of the images offered ({offered}).")
        return None
    entry = catalog[key]
    try:
        # Admin data, but a typo there must read as such, not as a crash.
        if not isinstance(entry, Mapping) or entry.get("interface") not in INTERFACES:
            raise SpecError({"image": ["not a listed image"]})
        reference = oci_reference(entry.get("image"), field_name="image")
    except SpecError:
        fields.error("image", "This image is misconfigured in the portal: tell the platform team.")
        return None
    label = entry.get("label") if isinstance(entry.get("label"), str) else key
    return key, "", reference, entry["interface"], label


def _read_gpus(fields: SpecFields, ctx: LaunchContext) -> dict[str, Any]:
    """The GPU fields of the clean spec: none (a CPU notebook), `gpus` whole GPUs of a model,
    one MIG instance, or one HAMi share with its memory and compute."""
    if fields.spec.get("gpu") in (None, ""):
        if fields.spec.get("gpus") not in (None, "", 0, "0"):
            fields.error("gpus", "Pick a GPU first.")
        refuse_hami_fields(fields)
        return {"gpu": "", "gpus": 0}
    gpu = read_gpu(fields, ctx)
    gpus = read_gpu_count(fields, gpu, ctx, field_name="gpus", per="per notebook")
    memory, cores = read_hami_share(fields, gpu, ctx)
    if gpu is None:
        return {}
    return {"gpu": gpu.key, "gpus": gpus, **share_fields(gpu, memory, cores)}


def _read_home(fields: SpecFields, ctx: LaunchContext) -> dict[str, Any]:
    """The launching person's home volume, sized and placed as the catalog says; with no one
    launching, the one the spec has (empty when it has none: a quote)."""
    if ctx.person:
        name = home_claim(ctx.person)
        source: Mapping[str, Any] = {
            "home_gib": ctx.catalog.get("notebook_home_gib", DEFAULT_HOME_GIB),
            "home_access_mode": ctx.catalog.get("notebook_home_access_mode")
            or DEFAULT_HOME_ACCESS_MODE,
            "home_storage_class": ctx.catalog.get("notebook_home_storage_class") or "",
        }
    else:
        name = fields.spec.get("home") or ""
        if name and (not isinstance(name, str) or len(name) > MAX_HOME_NAME
                     or not HOME_CLAIM.fullmatch(name)):
            fields.error("home", "Not a home volume's name (home-<user>).")
        source = {
            "home_gib": fields.spec.get("home_gib")
            or ctx.catalog.get("notebook_home_gib", DEFAULT_HOME_GIB),
            "home_access_mode": fields.spec.get("home_access_mode")
            or ctx.catalog.get("notebook_home_access_mode") or DEFAULT_HOME_ACCESS_MODE,
            "home_storage_class": fields.spec.get("home_storage_class")
            or ctx.catalog.get("notebook_home_storage_class") or "",
        }
    home = SpecFields(source, HOME_FIELDS)
    size = home.whole("home_gib", default=None, minimum=1, maximum=MAX_HOME_GIB)
    mode = source["home_access_mode"]
    if mode not in HOME_ACCESS_MODES:
        home.error("home_access_mode", f"One of {', '.join(HOME_ACCESS_MODES)}.")
    storage_class = source["home_storage_class"]
    if storage_class and (not isinstance(storage_class, str)
                          or not STORAGE_CLASS.fullmatch(storage_class)):
        home.error("home_storage_class", "A StorageClass name.")
    for name_, messages in home.errors.items():
        for message in messages:
            fields.error(name_, message)
    return {"home": name, "home_gib": size, "home_access_mode": mode,
            "home_storage_class": storage_class}


def validate(spec: Mapping[str, Any], ctx: LaunchContext) -> dict[str, Any]:
    """The clean spec, with the image and the home volume resolved, or SpecError naming each
    field to fix. A person launching gives no `home`: theirs is put in."""
    fields = SpecFields(spec, LAUNCH_FIELDS if ctx.person else FIELDS)
    image = _read_image(fields, ctx)
    cpu = fields.whole("cpu", default=DEFAULT_CPU, minimum=1, maximum=MAX_CPU)
    memory = fields.whole("memory_gib", default=DEFAULT_MEMORY_GIB, minimum=1,
                          maximum=MAX_MEMORY_GIB)
    gpus = _read_gpus(fields, ctx)
    running = fields.flag("running", default=True)
    home = _read_home(fields, ctx)
    fields.raise_errors()
    key, custom, reference, interface, label = image
    return {
        "image": key,
        "custom_image": custom,
        "image_ref": reference,
        "image_label": label,
        "interface": interface,
        "cpu": cpu,
        "memory_gib": memory,
        **gpus,
        "running": running,
        **home,
    }


def scale(
    spec: Mapping[str, Any], changes: Mapping[str, Any], ctx: LaunchContext
) -> dict[str, Any]:
    """A new spec with more or fewer vCPUs, memory or GPUs (or a HAMi share's memory and
    compute); its image and home stay. A running notebook restarts with the new size."""
    if not isinstance(changes, Mapping):
        raise SpecError({ALL: ["The changes are a JSON object of fields."]})
    fixed = {
        str(key)[:100]: [
            "Fixed for a notebook: launch a new one to change it."
            if key in FIELDS else "Unknown field."
        ]
        for key in changes
        if key not in SCALABLE
    }
    if fixed:
        raise SpecError(fixed)
    fields = SpecFields({k: v for k, v in {**spec, **changes}.items()
                         if k in (*SCALABLE, "gpu")}, (*SCALABLE, "gpu"))
    cpu = fields.whole("cpu", default=DEFAULT_CPU, minimum=1, maximum=MAX_CPU)
    memory = fields.whole("memory_gib", default=DEFAULT_MEMORY_GIB, minimum=1,
                          maximum=MAX_MEMORY_GIB)
    if not spec.get("gpu") and any(k in changes for k in GPU_FIELDS):
        for name in sorted(set(changes) & set(GPU_FIELDS)):
            fields.error(name, "This notebook has no GPU: launch one with a GPU instead.")
        gpus: dict[str, Any] = {}
    else:
        gpus = _read_gpus(fields, ctx)
    fields.raise_errors()
    new = {k: v for k, v in spec.items() if k not in HAMI_FIELDS}
    return {**new, "cpu": cpu, "memory_gib": memory, **gpus}


def power(spec: Mapping[str, Any], action: str) -> dict[str, Any]:
    """The spec after `stop` (no pod; the home volume stays) or `start`."""
    if action not in POWER_ACTIONS:
        raise SpecError({"action": [f"One of {', '.join(POWER_ACTIONS)}."]})
    return {**spec, "running": action == "start"}


def demand(spec: Mapping[str, Any]) -> dict[str, int]:
    """Running: its vCPUs, memory, GPUs (or HAMi share) and home volume. Stopped: only the
    home volume, as a stopped VM holds only its disk; the rest goes back to the tenant's free
    quota."""
    held = {"storage-gib": int(spec["home_gib"]), "count:notebook": 1}
    if not spec.get("running", True):
        return held
    held |= {"cpu": int(spec["cpu"]), "memory-gib": int(spec["memory_gib"])}
    if spec.get("gpu"):
        held |= Gpu.of(spec["gpu"]).demand(int(spec.get("gpus") or 1),
                                           spec.get("gpu_memory_gib"), spec.get("gpu_cores"))
    return held
