"""Workloads of every kind: list, show, launch (flags or a YAML file), scale, stop, start,
delete, wait until ready; and a vCluster's kubeconfig merged into the user's."""

from __future__ import annotations

import sys
import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.text import Text

from .client import Client
from .documents import yaml_mapping
from .exits import CliError, Exit
from .kubeconfig import merge_into_file
from .operations import WORKLOAD_KINDS
from .output import Format, OutputOption, emit, say, stderr
from .session import command, signed_in

workloads_app = typer.Typer(help="Workloads: vClusters, inference endpoints, VMs, Slurm "
                            "clusters and notebooks.", no_args_is_help=True)

Kind = StrEnum("Kind", {kind: kind for kind in WORKLOAD_KINDS})  # type: ignore[misc]


class Target(StrEnum):
    ready = "ready"
    deleted = "deleted"


LIST_COLUMNS = ("id", "name", "kind", "status_label", "tenant", "label", "status_message",
                "created_at")
SHOW_COLUMNS = ("id", "name", "tenant", "kind_label", "status", "status_label", "status_message",
                "status_detail", "in_progress", "spec", "demand", "connection", "launched_by",
                "label", "created_at", "ready_at", "url")
# Statuses a wait for "ready" cannot get out of.
DEAD_ENDS = {"failed", "deleting", "deleted"}

WorkloadArgument = Annotated[str, typer.Argument(
    help="The workload: its id, or its name in the current tenant.")]
TenantOption = Annotated[str, typer.Option("--tenant", "-t", help="A tenant's slug (default: "
                                           "the current tenant).")]
SetOption = Annotated[list[str] | None, typer.Option(
    "--set", help="A spec field as NAME=VALUE (VALUE read as YAML: 4, true, text); repeat it.")]
TimeoutOption = Annotated[float, typer.Option(help="Seconds to wait before giving up (exit 5).")]
IntervalOption = Annotated[float, typer.Option(help="Seconds between two looks.")]


def parse_sets(pairs: list[str] | None) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for pair in pairs or []:
        name, separator, raw = pair.partition("=")
        if not separator or not name.strip():
            raise CliError(f"--set takes NAME=VALUE, not {pair!r}.", Exit.USAGE)
        try:
            values[name.strip()] = yaml.safe_load(raw) if raw else ""
        except yaml.YAMLError:
            values[name.strip()] = raw
    return values


def resolve(client: Client, reference: str, tenant: str) -> dict[str, Any]:
    """The workload `reference` names: an id, or a live workload's name in `tenant`."""
    if reference.isdigit():
        return client.call("workloads.get", id=int(reference))
    if not tenant:
        raise CliError(f"Name {reference!r} needs a tenant: give --tenant or run portalctl "
                       "tenants use SLUG (or use the workload's id).", Exit.USAGE)
    for workload in client.pages("workloads.list", params={"tenant": tenant}):
        if workload["name"] == reference:
            return client.call("workloads.get", id=workload["id"])
    raise CliError(f"No workload {reference!r} in tenant {tenant}.", Exit.NOT_FOUND)


def _target(reference: str, tenant: str) -> tuple[Client, dict[str, Any]]:
    config, client = signed_in()
    return client, resolve(client, reference, tenant or config.tenant)


def wait_for(client: Client, workload: dict[str, Any], *, target: Target, timeout: float,
             interval: float) -> dict[str, Any]:
    """Poll the workload until it reaches `target`, showing where it is; CliError with exit 7
    when it failed, 5 when `timeout` passed first."""
    started = time.monotonic()
    name = workload["name"]
    # Text, not markup: a status message such as "[vcluster syncer] …" is shown as it is.
    with stderr().status(Text(f"{name}: {workload['status_label']}")) as status:
        while True:
            state = workload["status"]
            if state == target.value or (target is Target.ready and state == "degraded"):
                return workload
            if target is Target.ready and state in DEAD_ENDS:
                reason = workload.get("status_message") or workload.get("status_reason") or ""
                raise CliError(f"{name} is {workload['status_label'].lower()}"
                               + (f": {reason}" if reason else "."), Exit.FAILED)
            elapsed = time.monotonic() - started
            if elapsed >= timeout:
                raise CliError(f"{name} is still {workload['status_label'].lower()} after "
                               f"{timeout:g} s.", Exit.TIMEOUT)
            message = workload.get("status_message") or ""
            status.update(Text(f"{name}: {workload['status_label']} ({elapsed:.0f} s)"
                               + (f" — {message}" if message else "")))
            time.sleep(min(interval, max(0.0, timeout - elapsed)))
            try:
                workload = client.call("workloads.get", id=workload["id"])
            except CliError as error:
                if target is Target.deleted and error.code is Exit.NOT_FOUND:
                    return {**workload, "status": "deleted", "status_label": "Deleted"}
                raise


def _then(client: Client, workload: dict[str, Any], target: Target | None, timeout: float,
          interval: float, output: Format) -> None:
    """Print the workload an action answered with, first waiting for `target` if asked."""
    if target is not None:
        workload = wait_for(client, workload, target=target, timeout=timeout, interval=interval)
    emit(workload, output, columns=SHOW_COLUMNS)


@workloads_app.command("list")
@command
def workloads_list(
    tenant: TenantOption = "",
    kind: Annotated[Kind | None, typer.Option(help="Only this kind.")] = None,
    status: Annotated[str, typer.Option(help="Only this status (deleted ones only so).")] = "",
    label: Annotated[str, typer.Option(help="Only those with this cost label.")] = "",
    all_tenants: Annotated[bool, typer.Option("--all-tenants", "-A",
                                              help="Every tenant you may see.")] = False,
    output: OutputOption = Format.table,
) -> None:
    """The workloads of the current tenant (or of every tenant you may see)."""
    config, client = signed_in()
    slug = "" if all_tenants else config.require_tenant(tenant)
    params = {"tenant": slug, "kind": kind.value if kind else "", "status": status,
              "label": label}
    emit(list(client.pages("workloads.list", params=params)), output, columns=LIST_COLUMNS)


@workloads_app.command("show")
@command
def workloads_show(workload: WorkloadArgument, tenant: TenantOption = "",
                   output: OutputOption = Format.table) -> None:
    """One workload: its spec, what it holds, its status and how to reach it."""
    _, found = _target(workload, tenant)
    emit(found, output, columns=SHOW_COLUMNS)


LAUNCH_FIELDS = {"tenant", "kind", "name", "spec", "cluster", "label"}


def _launch_body(file: Path | None, kind: str, name: str, sets: dict[str, Any],
                 cluster: str, label: str = "") -> dict[str, Any]:
    body: dict[str, Any] = {}
    if file is not None:
        text = sys.stdin.read() if str(file) == "-" else _read(file)
        loaded = yaml_mapping(text, what=str(file), code=Exit.USAGE)
        unknown = set(loaded) - LAUNCH_FIELDS
        if unknown:
            raise CliError(f"{file} has fields a launch does not take: {sorted(unknown)}.",
                           Exit.USAGE)
        body.update(loaded)
    spec = dict(body.get("spec") or {})
    spec.update(sets)
    flags = (("kind", kind), ("name", name), ("cluster", cluster), ("label", label))
    body.update({k: v for k, v in flags if v})
    body["spec"] = spec
    for required in ("kind", "name"):
        if not body.get(required):
            raise CliError(f"A launch needs a {required}: give it as an argument or in -f.",
                           Exit.USAGE)
    return body


def _read(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"Cannot read {file}: {exc}", Exit.USAGE) from exc


@workloads_app.command("launch")
@command
def workloads_launch(
    kind: Annotated[str, typer.Argument(help="vcluster, inference, vm, slurm or notebook.")] = "",
    name: Annotated[str, typer.Argument(help="Its name (a DNS-1123 label).")] = "",
    file: Annotated[Path | None, typer.Option(
        "--file", "-f", help="A YAML file with kind, name, spec (and cluster, label, tenant); - "
        "reads stdin.")] = None,
    sets: SetOption = None,
    cluster: Annotated[str, typer.Option(help="The cluster to run on (default: the portal "
                                         "picks).")] = "",
    label: Annotated[str, typer.Option(help="A cost label (project or experiment): its cost "
                                       "shows by label on the spend page.")] = "",
    tenant: TenantOption = "",
    wait: Annotated[bool, typer.Option("--wait", help="Wait until it is ready.")] = False,
    timeout: TimeoutOption = 900.0,
    interval: IntervalOption = 2.0,
    output: OutputOption = Format.table,
) -> None:
    """Launch a workload from flags (--set NAME=VALUE per spec field) or a YAML file (-f);
    flags win over the file. Admitted against the tenant's quota."""
    config, client = signed_in()
    body = _launch_body(file, kind, name, parse_sets(sets), cluster, label)
    body["tenant"] = config.require_tenant(tenant or body.get("tenant", ""))
    if body["kind"] not in WORKLOAD_KINDS:
        raise CliError(f"Unknown kind {body['kind']!r}: one of {', '.join(WORKLOAD_KINDS)}.",
                       Exit.USAGE)
    launched = client.call("workloads.launch", body=body)
    say(f"Launched {launched['kind_label']} {launched['name']} (id {launched['id']}).")
    _then(client, launched, Target.ready if wait else None, timeout, interval, output)


@workloads_app.command("scale")
@command
def workloads_scale(workload: WorkloadArgument, sets: SetOption = None, tenant: TenantOption = "",
                    output: OutputOption = Format.table) -> None:
    """Resize it: --set max_replicas=3, --set workers=4, --set cpu=8 …"""
    changes = parse_sets(sets)
    if not changes:
        raise CliError("Say what to change: --set NAME=VALUE.", Exit.USAGE)
    client, found = _target(workload, tenant)
    emit(client.call("workloads.scale", id=found["id"], body={"changes": changes}), output,
         columns=SHOW_COLUMNS)


def _power(workload: str, tenant: str, action: str, output: Format) -> None:
    client, found = _target(workload, tenant)
    emit(client.call("workloads.power", id=found["id"], body={"action": action}), output,
         columns=SHOW_COLUMNS)


@workloads_app.command("stop")
@command
def workloads_stop(workload: WorkloadArgument, tenant: TenantOption = "",
                   output: OutputOption = Format.table) -> None:
    """Stop a VM or a notebook (its disk or home volume is kept, its GPUs given back)."""
    _power(workload, tenant, "stop", output)


@workloads_app.command("start")
@command
def workloads_start(workload: WorkloadArgument, tenant: TenantOption = "",
                    output: OutputOption = Format.table) -> None:
    """Start a stopped VM or notebook again."""
    _power(workload, tenant, "start", output)


@workloads_app.command("delete")
@command
def workloads_delete(
    workload: WorkloadArgument, tenant: TenantOption = "",
    wait: Annotated[bool, typer.Option("--wait", help="Wait until it is gone.")] = False,
    timeout: TimeoutOption = 600.0, interval: IntervalOption = 2.0,
    output: OutputOption = Format.table,
) -> None:
    """Delete it: its objects leave the cluster, then its quota is released."""
    client, found = _target(workload, tenant)
    deleted = client.call("workloads.delete", id=found["id"])
    say(f"Deleting {deleted['name']}.")
    _then(client, deleted, Target.deleted if wait else None, timeout, interval, output)


@workloads_app.command("wait")
@command
def workloads_wait(
    workload: WorkloadArgument, tenant: TenantOption = "",
    for_: Annotated[Target, typer.Option("--for", help="ready or deleted.")] = Target.ready,
    timeout: TimeoutOption = 900.0, interval: IntervalOption = 2.0,
    output: OutputOption = Format.table,
) -> None:
    """Wait until it is ready (exit 7 if it fails) or deleted; exit 5 after --timeout."""
    client, found = _target(workload, tenant)
    emit(wait_for(client, found, target=for_, timeout=timeout, interval=interval), output,
         columns=SHOW_COLUMNS)


@command
def kubeconfig(
    workload: WorkloadArgument, tenant: TenantOption = "",
    use: Annotated[bool, typer.Option("--use", help="Switch kubectl's current context to "
                                      "it.")] = False,
    print_only: Annotated[bool, typer.Option("--print", help="Print it instead of merging "
                                             "it.")] = False,
    context: Annotated[str, typer.Option(help="The context's name (default: "
                                         "TENANT-WORKLOAD).")] = "",
    output: OutputOption = Format.table,
) -> None:
    """Fetch a ready vCluster's kubeconfig and merge it into $KUBECONFIG (or ~/.kube/config):
    other contexts are kept, the file is backed up first."""
    client, found = _target(workload, tenant)
    text = client.request("workloads.kubeconfig", id=found["id"]).text
    if print_only:
        sys.stdout.write(text)
        return
    name = context or f"{found['tenant']}-{found['name']}"
    path, backup = merge_into_file(text, name=name, use=use)
    say(f"Context {name} merged into {path}" + (f" (backup: {backup})." if backup else "."))
    emit({"context": name, "kubeconfig": str(path), "backup": str(backup) if backup else None,
          "current": use}, output)
