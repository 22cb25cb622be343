"""Workloads with their event history, and quota requests with their lines."""

from __future__ import annotations

import datetime
from collections.abc import Iterator

from tenants.models import (
    QuotaRequest,
    QuotaRequestLine,
    Workload,
    WorkloadEvent,
)
from tenants.workloads.kinds.base import GpuOffer, LaunchContext
from tenants.workloads.registry import KINDS

from .copying import TableWriter
from .plan import (
    BENCH_TENANT_SHARE,
    GPUS_PER_NODE,
    JUSTIFICATIONS,
    NOTEBOOK_IMAGES,
    QUOTA_DECIDED,
    SPEC_TEMPLATES,
    VM_IMAGES,
    WORKLOAD_STATES,
    weighted,
)


class WorkloadTables(TableWriter):

    def _clean_spec(self, kind: str, model: str) -> tuple[dict, dict]:
        """The spec as the kind validates it, and what it holds (computed once per pair)."""
        cache = self.__dict__.setdefault("_specs", {})
        if (kind, model) not in cache:
            module = KINDS[kind].module
            gpu = f"gpu:{model}"
            ctx = LaunchContext(
                isolation="shared",
                quota={gpu: 64, "cpu": 1024, "memory-gib": 8192, "storage-gib": 50000}
                | {f"count:{k}": 100 for k in KINDS},
                gpu_offers=(GpuOffer(resource=gpu, label=gpu, max_per_node=GPUS_PER_NODE),),
                catalog={"vm_images": {key: {"label": label, "container_disk": disk,
                                             "min_disk_gib": min_disk, "default_user": user}
                                       for key, label, disk, min_disk, user in VM_IMAGES},
                         "notebook_images": {key: {"label": label, "image": image,
                                                   "interface": interface}
                                             for key, label, image, interface in NOTEBOOK_IMAGES}},
                person="bench",  # a notebook's home volume: one person's for the whole data set
            )
            spec = module.validate(SPEC_TEMPLATES[kind](model), ctx)
            cache[(kind, model)] = (spec, module.demand(spec))
        return cache[(kind, model)]

    def workloads(self) -> int:
        rng = self.rng
        tenants = self.sizes.tenants
        kinds = list(KINDS)
        self.workload_rows: list[tuple[int, int, str, dict, datetime.datetime, str]] = []
        rows = []
        for w in range(self.sizes.workloads):
            workload_id = w + 1
            tenant_id = 1 if w % BENCH_TENANT_SHARE == 0 else w % tenants + 1
            kind = kinds[w % len(kinds)]
            status = weighted(rng, WORKLOAD_STATES)
            spec, demand = self._clean_spec(kind, self.tenant_model[tenant_id])
            created = self.anchor - datetime.timedelta(minutes=rng.randint(60, 60 * 24 * 300))
            members = self.tenant_members[tenant_id]
            launched_by = members[w % len(members)]
            ready_at = (created + datetime.timedelta(minutes=4)
                        if status in ("ready", "degraded", "deleting", "deleted") else None)
            rows.append({
                "id": workload_id, "tenant_id": tenant_id, "kind": kind,
                "name": f"{kind}-{workload_id:05d}", "launched_by_id": launched_by,
                "spec": spec, "demand": demand, "status": status,
                "status_reason": "ModelNotFound" if status == "failed" else "",
                "status_message": "The model could not be downloaded." if status == "failed"
                else "",
                "observed": {"conditions": [{"type": "Ready", "status":
                                             "True" if status == "ready" else "False"}]},
                "observation_recorded_at": self.anchor - datetime.timedelta(minutes=1),
                "created_at": created, "ready_at": ready_at,
                "deleted_at": created + datetime.timedelta(days=3) if status == "deleted"
                else None,
                "desired_version": 2, "applied_version": 2 if status != "pending" else 1,
                "applied_at": created + datetime.timedelta(minutes=1),
            })
            self.workload_rows.append((workload_id, tenant_id, status, demand, created,
                                       launched_by))
        return self._copy(Workload, rows)

    def workload_events(self) -> int:
        def rows() -> Iterator[dict]:
            event_id = 0
            for workload_id, _, status, demand, created, actor in self.workload_rows:
                steps = [("launched", "", "pending", actor, demand)]
                if status != "pending":
                    steps.append(("applied", "", "", None, demand))
                    steps.append(("transition", "pending", "provisioning", None, demand))
                if status in ("ready", "degraded", "deleting", "deleted"):
                    steps.append(("transition", "provisioning", "ready", None, demand))
                if status == "degraded":
                    steps.append(("transition", "ready", "degraded", None, demand))
                if status == "failed":
                    steps.append(("error", "", "", None, demand))
                    steps.append(("transition", "provisioning", "failed", None, demand))
                if status in ("deleting", "deleted"):
                    steps.append(("delete", "", "", actor, demand))
                    steps.append(("transition", "ready", "deleting", None, demand))
                if status == "deleted":
                    steps.append(("transition", "deleting", "deleted", None, {}))
                for position, (kind, source, target, who, held) in enumerate(steps):
                    event_id += 1
                    yield {
                        "id": event_id, "workload_id": workload_id,
                        "created_at": created + datetime.timedelta(minutes=2 * position),
                        "kind": kind, "from_status": source, "to_status": target,
                        "reason": "ModelNotFound" if kind == "error" else "",
                        "actor_id": who, "demand": held,
                    }
        return self._copy(WorkloadEvent, rows())

    # --- quota requests -------------------------------------------------------------------------

    def quota_requests(self) -> int:
        rng = self.rng
        tenants = self.sizes.tenants
        awaiting = self.sizes.awaiting_review
        total = self.sizes.quota_requests
        self.request_lines: list[tuple[int, int, str]] = []
        self.request_status: dict[int, str] = {}
        rows = []
        for q in range(total):
            request_id = q + 1
            tenant_id = q % tenants + 1
            # The newest requests are the ones awaiting review; a few are on their way.
            newest_first = total - q
            if newest_first <= awaiting:
                status = "submitted"
            elif newest_first <= awaiting + max(1, awaiting // 40):
                status = "approved" if q % 2 else "failed"
            else:
                status = weighted(rng, QUOTA_DECIDED)
            created = self.anchor - datetime.timedelta(
                minutes=int(newest_first * 365 * 24 * 60 / total) + rng.randint(0, 59))
            decided = status != "submitted" and status != "withdrawn"
            rows.append({
                "id": request_id, "tenant_id": tenant_id,
                "requested_by_id": self.tenant_owner.get(tenant_id, 1),
                "justification": JUSTIFICATIONS[q % len(JUSTIFICATIONS)],
                "ends_on": (created + datetime.timedelta(days=42)).date() if q % 4 == 0
                else None,
                "status": status, "created_at": created,
                "decided_by_id": 2 if decided else None,
                "decided_at": created + datetime.timedelta(hours=5) if decided else None,
                "decision_note": "No capacity this quarter." if status == "rejected" else "",
                "applied_at": created + datetime.timedelta(hours=6)
                if status in ("applied", "expired") else None,
                "last_error": "the API server answered 503" if status == "failed" else "",
                "attempts": 1 if decided else 0,
                "ended_at": created + datetime.timedelta(days=42) if status == "expired"
                else None,
            })
            model = self.tenant_model[tenant_id]
            self.request_lines.append((request_id, 1 + q % 8, f"gpu:{model}"))
            if q % 3 == 0:
                self.request_lines.append((request_id, 64, "cpu"))
            self.request_status[request_id] = status
        return self._copy(QuotaRequest, rows)

    def quota_request_lines(self) -> int:
        def rows() -> Iterator[dict]:
            for line_id, (request_id, amount, resource) in enumerate(self.request_lines, 1):
                granted = self.request_status[request_id] in ("applied", "expired", "approved",
                                                              "failed")
                yield {"id": line_id, "request_id": request_id, "resource": resource,
                       "amount": amount, "approved_amount": amount if granted else None,
                       "limit_before": 16 if granted else None,
                       "limit_after": 16 + amount if granted else None}
        return self._copy(QuotaRequestLine, rows())

