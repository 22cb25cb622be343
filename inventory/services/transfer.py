"""Import and export the inventory. An import is all-or-nothing: every row is checked (values,
duplicates within the file and against the inventory, rack space), a dry run shows what would
change, and the real run writes everything in one transaction or nothing at all.

New nodes arrive `discovered`; their lifecycle state is never set by an import.
"""

import ipaddress
from collections import defaultdict
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction
from django.utils import timezone

from core.audit import audit

from .. import identifiers, resource_classes, transfer
from ..models import GPU, NIC, BiosProfile, InventoryRun, Node, NodeState, Rack, Site
from ..tenancy import tenant_directory
from ..transfer import ImportResult, RowResult, parse_bool, parse_identifier, parse_int

MAX_ROWS = 20000
MODELS: dict[str, type[models.Model]] = {"nodes": Node, "gpus": GPU, "nics": NIC}
# The import's column where it differs from the model's field name (for error messages).
COLUMN_OF = {"hostname": "name", "reserved_for": "tenant", "height_units": "u_height",
             "link_speed_gbps": "speed_gbps", "kind": "type"}


def _field_errors(model: type[models.Model], wanted: dict[str, Any]) -> list[str]:
    """What the database would refuse: values too long, numbers out of the column's range,
    names that are not host names. Checked per row, so that no row fails only at write time."""
    errors = []
    for key, value in wanted.items():
        if key in ("rack", "node") or value is None:
            continue
        try:
            model._meta.get_field(key).run_validators(value)
        except ValidationError as exc:
            errors.append(f"{COLUMN_OF.get(key, key)}: {' '.join(exc.messages)}")
    return errors


class _Importer:
    """Checks rows against each other and the inventory, then (optionally) writes them."""

    def __init__(self) -> None:
        self.nodes = {n.hostname: n for n in Node.objects.select_related("rack__site")}
        self.sites = {s.slug: s for s in Site.objects.all()}
        self.racks = {(r.site.slug, r.name): r for r in Rack.objects.select_related("site")}
        self.tenants = tenant_directory().tenant_slugs()
        self.gpus = {(g.node.hostname, g.index): g for g in GPU.objects.select_related("node")}
        self.nics = {(n.node.hostname, n.name): n for n in NIC.objects.select_related("node")}
        # identifier -> (owner key, line) of whoever holds it: the inventory (line 0) or a row
        self.claims: dict[tuple[str, str], tuple[str, int]] = {}
        for node in self.nodes.values():
            self._hold("Kubernetes node name", node.k8s_name, node.hostname)
            self._hold("node serial", node.serial, node.hostname)
            self._hold("BMC address", node.bmc_address, node.hostname)
        for key, gpu in self.gpus.items():
            self._hold("GPU UUID", gpu.uuid, f"{key[0]}/GPU{key[1]}")
            self._hold("GPU serial", gpu.serial, f"{key[0]}/GPU{key[1]}")
        for key, nic in self.nics.items():
            self._hold("MAC", nic.mac_address, f"{key[0]}/{key[1]}")
            self._hold("InfiniBand GUID", nic.ib_guid, f"{key[0]}/{key[1]}")
        self.node_rows: dict[str, tuple[int, str]] = {}  # name -> (line, rack label)
        self.occupied: dict[int | str, list[tuple[int, int, str]]] = defaultdict(list)
        for node in self.nodes.values():
            if node.rack_id and node.position:
                self.occupied[node.rack_id].append((node.position, node.top_unit, node.hostname))
        self.plans: list[tuple[str, dict[str, Any]]] = []
        self.row_keys: dict[tuple[str, str], int] = {}

    def _hold(self, what: str, value: str | None, owner: str, line: int = 0) -> None:
        if value:
            self.claims[(what, value)] = (owner, line)

    def _claim(self, what: str, value: str | None, owner: str, line: int, errors: list) -> None:
        if not value:
            return
        holder = self.claims.get((what, value))
        if holder is not None and holder[0] != owner:
            where = f"row {holder[1]}" if holder[1] else "the inventory"
            errors.append(f"duplicate {what} {value}: already {holder[0]}'s ({where})")
            return
        self.claims[(what, value)] = (owner, line)

    def node(self, row: transfer.Row, result: RowResult) -> None:
        v, errors = row.values, result.errors
        name = v.get("name", "")
        result.key = name
        if not name:
            errors.append("name: required")
            return
        name_errors = _field_errors(Node, {"hostname": name})
        errors += name_errors
        seen = self.node_rows.get(name)
        rack_label = f"{v.get('site', '')}/{v.get('rack', '')}".strip("/")
        if seen is not None:
            if seen[1] != rack_label:
                errors.append(f"node {name} is also in rack {seen[1] or '(none)'} (row {seen[0]})")
            else:
                errors.append(f"node {name} appears twice (row {seen[0]})")
            return
        self.node_rows[name] = (row.line, rack_label)
        existing = self.nodes.get(name)
        wanted: dict[str, Any] = {}
        # Kubernetes names a node after its host name, in lowercase (not from a bad name: one
        # error about it is enough).
        derived_from_bad_name = bool(name_errors) and not v.get("k8s_name")
        if ("k8s_name" in v or existing is None) and not derived_from_bad_name:
            wanted["k8s_name"] = v.get("k8s_name") or (
                existing.k8s_name if existing else name.lower()
            )
            self._claim("Kubernetes node name", wanted["k8s_name"], name, row.line, errors)
        for key, choices, attr in (("role", Node.Role.values, "role"),
                                   ("bios_profile", BiosProfile.values, "bios_profile")):
            if v.get(key):
                if v[key] not in choices:
                    errors.append(f"{key}: {v[key]!r} is not one of {', '.join(choices)}")
                wanted[attr] = v[key]
        if "serial" in v:
            wanted["serial"] = v["serial"] or None
            self._claim("node serial", wanted["serial"], name, row.line, errors)
        if "bmc_address" in v:
            address = v["bmc_address"] or None
            if address:
                try:
                    address = str(ipaddress.ip_address(address))
                except ValueError:
                    errors.append(f"bmc_address: {address!r} is not an IP address")
            wanted["bmc_address"] = address
            self._claim("BMC address", address, name, row.line, errors)
        if "tenant" in v:
            if v["tenant"] and v["tenant"] not in self.tenants:
                errors.append(f"tenant: no tenant {v['tenant']!r}")
            wanted["reserved_for"] = v["tenant"]
        for key in ("cpu_cores", "memory_gib"):
            if key in v:
                wanted[key] = parse_int(v, key, errors) or 0
        self._place(v, name, row.line, existing, wanted, errors)
        self._plan("nodes", row, result, existing, wanted)

    def _place(self, v: dict, name: str, line: int, existing: Node | None, wanted: dict,
               errors: list[str]) -> None:
        if not any(k in v for k in ("site", "rack", "position", "u_height")):
            return
        site_slug, rack_name = v.get("site", ""), v.get("rack", "")
        position = parse_int(v, "position", errors)
        height = parse_int(v, "u_height", errors) or (existing.height_units if existing else 1)
        wanted["height_units"] = height
        if not site_slug and not rack_name:
            wanted["rack"], wanted["position"] = None, None
            return
        if site_slug not in self.sites:
            errors.append(f"site: no site {site_slug!r}")
            return
        if not rack_name or position is None:
            errors.append("a racked node needs site, rack and position")
            return
        rack = self.racks.get((site_slug, rack_name))
        if rack is None:  # created by the import: its name must fit
            try:
                Rack._meta.get_field("name").run_validators(rack_name)
            except ValidationError as exc:
                errors.append(f"rack: {' '.join(exc.messages)}")
                return
        rack_key: int | str = rack.pk if rack else f"{site_slug}/{rack_name}"
        units = rack.units if rack else 42
        top = position + height - 1
        if position < 1 or top > units:
            errors.append(f"position: units {position} to {top} do not fit a {units}U rack")
        for low, high, other in self.occupied[rack_key]:
            if other != name and low <= top and position <= high:
                errors.append(f"position: {other} already occupies U{low} to U{high} there")
        self.occupied[rack_key] = [o for o in self.occupied[rack_key] if o[2] != name]
        self.occupied[rack_key].append((position, top, name))
        wanted["rack"] = rack or (site_slug, rack_name)
        wanted["position"] = position

    def gpu(self, row: transfer.Row, result: RowResult) -> None:
        v, errors = row.values, result.errors
        device = v.get("device", "")
        index = parse_int(v, "index", errors, required=True)
        result.key = f"{device}/GPU{index}"
        if device not in self.nodes and device not in self.node_rows:
            errors.append(f"device: no node {device!r}")
        model = resource_classes.GPU_MODELS.get(v.get("model", ""))
        existing = self.gpus.get((device, index))
        if model is None:
            errors.append(f"model: unknown GPU model {v.get('model', '')!r}; known: "
                          + ", ".join(resource_classes.GPU_MODELS))
        wanted: dict[str, Any] = {"model": v.get("model", "")}
        if "uuid" in v:
            wanted["uuid"] = parse_identifier(v, "uuid", identifiers.normalize_gpu_uuid, errors)
            self._claim("GPU UUID", wanted["uuid"], result.key, row.line, errors)
        if "serial" in v:
            wanted["serial"] = v["serial"] or None
            self._claim("GPU serial", wanted["serial"], result.key, row.line, errors)
        if "memory_gib" in v or existing is None:
            memory = parse_int(v, "memory_gib", errors)
            wanted["memory_gib"] = memory or (model.memory_gib if model else 0)
        for key in ("mig_capable", "ecc_enabled"):
            flag = parse_bool(v, key, errors)
            if flag is not None:
                wanted[key] = flag
        if "mig_layout" in v:
            layout = [p.strip() for p in v["mig_layout"].split(";") if p.strip()]
            bad = [p for p in layout if model and p not in model.mig_profiles]
            if bad:
                errors.append(f"mig_layout: {model.display_name} has no MIG profile {bad[0]}")
            wanted["mig_layout"] = layout
        for key in ("pci_bus_id", "nvlink_domain"):
            if key in v:
                wanted[key] = v[key]
        if "numa_node" in v:
            wanted["numa_node"] = parse_int(v, "numa_node", errors)
        self._plan("gpus", row, result, existing, {**wanted, "node": device, "index": index})

    def nic(self, row: transfer.Row, result: RowResult) -> None:
        v, errors = row.values, result.errors
        device, name = v.get("device", ""), v.get("name", "")
        result.key = f"{device}/{name}"
        if device not in self.nodes and device not in self.node_rows:
            errors.append(f"device: no node {device!r}")
        existing = self.nics.get((device, name))
        if not name:
            errors.append("name: required")
        kind = v.get("type") or (existing.kind if existing else NIC.Kind.ETHERNET)
        if kind not in NIC.Kind.values:
            errors.append(f"type: {kind!r} is not one of {', '.join(NIC.Kind.values)}")
        wanted: dict[str, Any] = {"kind": kind}
        for key, what, normalize in (("mac_address", "MAC", identifiers.normalize_mac),
                                     ("ib_guid", "InfiniBand GUID", identifiers.normalize_guid)):
            if key in v:
                wanted[key] = parse_identifier(v, key, normalize, errors)
                self._claim(what, wanted[key], result.key, row.line, errors)
        has_guid = wanted.get("ib_guid") or v.get("ib_guid") or (existing and existing.ib_guid)
        if kind == NIC.Kind.INFINIBAND and not has_guid:
            errors.append("ib_guid: an InfiniBand port needs its GUID")
        if "speed_gbps" in v:
            wanted["link_speed_gbps"] = parse_int(v, "speed_gbps", errors) or 0
        if "fabric" in v:
            wanted["fabric"] = v["fabric"]
        for key in ("numa_node", "rail"):
            if key in v:
                wanted[key] = parse_int(v, key, errors)
        self._plan("nics", row, result, existing, {**wanted, "node": device, "name": name})

    def _plan(self, objects: str, row: transfer.Row, result: RowResult, existing: Any,
              wanted: dict[str, Any]) -> None:
        if objects != "nodes":  # nodes are checked for twins (and for two racks) on their own
            twin = self.row_keys.get((objects, result.key))
            if twin is not None:
                result.errors.append(f"{result.key} appears twice (row {twin})")
            else:
                self.row_keys[(objects, result.key)] = row.line
        result.errors += _field_errors(MODELS[objects], wanted)
        if result.errors:
            result.action = "error"
            return
        if existing is None:
            result.action = "create"
            result.changes = {
                COLUMN_OF.get(k, k): _shown(v) for k, v in wanted.items() if v not in (None, "")
            }
        else:
            changed = {
                COLUMN_OF.get(k, k): _shown(v) for k, v in wanted.items()
                if k not in ("node", "index", "name") and _current(existing, k) != _comparable(v)
            }
            result.action = "update" if changed else "unchanged"
            result.changes = changed
        self.plans.append((objects, {"existing": existing, "wanted": wanted, "key": result.key}))

    @transaction.atomic
    def apply(self) -> None:
        for objects, plan in self.plans:
            existing, wanted = plan["existing"], dict(plan["wanted"])
            if objects == "nodes":
                rack = wanted.get("rack")
                if isinstance(rack, tuple):
                    site = self.sites[rack[0]]
                    rack, _ = Rack.objects.get_or_create(site=site, name=rack[1])
                    self.racks[(site.slug, rack.name)] = rack
                if "rack" in wanted:
                    wanted["rack"] = rack
                if existing is None:
                    node = Node.objects.create(
                        hostname=plan["key"], **wanted, state=NodeState.DISCOVERED
                    )
                    self.nodes[node.hostname] = node
                else:
                    _save(existing, wanted)
            else:
                wanted["node"] = self.nodes[wanted["node"]]
                model = GPU if objects == "gpus" else NIC
                if existing is None:
                    model.objects.create(**wanted)
                else:
                    _save(existing, wanted)


def _comparable(value: Any) -> Any:
    return value.pk if isinstance(value, Rack) else value


def _current(obj: Any, key: str) -> Any:
    return obj.rack_id if key == "rack" else getattr(obj, key)


def _shown(value: Any) -> Any:
    if isinstance(value, Rack):
        return str(value)
    if isinstance(value, tuple):
        return "/".join(value)
    return value


def _save(obj: Any, wanted: dict[str, Any]) -> None:
    changed = [k for k, v in wanted.items() if k not in ("node",) and getattr(obj, k) != v]
    for key in changed:
        setattr(obj, key, wanted[key])
    if changed:
        obj.save(update_fields=changed)


def inventory_import(
    *, text: str, fmt: str, objects: str = "nodes", dry_run: bool = True, actor: Any = None
) -> ImportResult:
    """Check every row; with `dry_run` False and no error anywhere, write them all at once."""
    result = ImportResult(dry_run=dry_run)
    if "\x00" in text:
        result.errors.append("The file contains NUL characters: it is not CSV or JSON text.")
        return result
    try:
        rows = transfer.parse_json(text) if fmt == "json" else transfer.parse_csv(
            text, objects=objects
        )
    except transfer.FormatError as exc:
        result.errors.append(str(exc))
        return result
    if len(rows) > MAX_ROWS:
        result.errors.append(f"{len(rows)} rows: at most {MAX_ROWS} per import.")
        return result
    if not rows:
        result.errors.append("The file holds no rows: nothing to import.")
        return result
    importer = _Importer()
    # Nodes first, so that GPUs and NICs may refer to nodes created by the same import.
    for row in sorted(rows, key=lambda r: ("nodes", "gpus", "nics").index(r.objects)):
        row_result = RowResult(objects=row.objects, line=row.line, key="")
        if "__extra__" in row.values:
            row_result.errors.append(row.values["__extra__"])
        getattr(importer, row.objects[:-1])(row, row_result)
        if row_result.errors:
            row_result.action = "error"
        result.rows.append(row_result)
    result.rows.sort(key=lambda r: (r.line, ("nodes", "gpus", "nics").index(r.objects)))
    if dry_run or not result.ok:
        return result
    try:
        with transaction.atomic():
            importer.apply()
            run = InventoryRun.objects.create(
                kind=InventoryRun.Kind.IMPORT, ok=True, finished_at=timezone.now(),
                summary={a: result.count(a) for a in ("create", "update", "unchanged")},
            )
            audit(actor=actor, action="inventory.import", obj=run,
                  changes={"format": fmt, "objects": objects, **run.summary})
    except IntegrityError as exc:  # a concurrent change took an identifier meanwhile
        result.errors.append(f"Nothing was imported: the inventory changed meanwhile ({exc}).")
        return result
    result.applied = True
    return result
