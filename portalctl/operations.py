"""The API operations portalctl calls, with the fields it sends and reads.

This is the client's contract with the portal: tests/portalctl/test_contract.py checks every
entry against the OpenAPI schema the portal generates (path, method, query parameters, request
body fields, response fields and media type), so a change of the API under the CLI fails a test.
Add a field here before a command reads or sends it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Operation:
    method: str
    path: str  # exactly as in the OpenAPI schema, {placeholders} included
    query: tuple[str, ...] = ()  # query parameters it may send
    body: tuple[str, ...] = ()  # request body fields it may send
    fields: tuple[str, ...] = ()  # response fields it reads (of each item, for a list)
    paginated: bool = False  # the answer is a page: count, next, results
    media: str = "application/json"  # the media type of the answer it reads


PAGE = ("page", "page_size")
TENANT_FIELDS = ("slug", "name", "cost_center", "isolation", "status", "namespace", "created_at")
WORKLOAD_FIELDS = (
    "id", "url", "tenant", "kind", "kind_label", "name", "status", "status_label",
    "status_reason", "status_message", "status_detail", "in_progress", "spec", "demand",
    "cluster", "connection", "created_at", "ready_at", "deleted_at", "launched_by", "label",
)
INVOICE_FIELDS = (
    "id", "number", "status", "tenant", "tenant_name", "period_start", "period_end", "currency",
    "total", "net_total", "balance_due", "issue_date", "due_date",
)

OPERATIONS: dict[str, Operation] = {
    "me": Operation("GET", "/api/v1/me/", fields=("id", "username", "name", "email", "roles",
                                                 "tenants")),
    "tenants.list": Operation("GET", "/api/v1/tenants/", query=PAGE, fields=TENANT_FIELDS,
                              paginated=True),
    "tenants.get": Operation("GET", "/api/v1/tenants/{slug}/", fields=TENANT_FIELDS),
    "tenants.quota": Operation(
        "GET", "/api/v1/tenants/{slug}/quota/", query=PAGE, paginated=True,
        fields=("resource", "cluster", "label", "limit", "used", "temporary", "ends_on"),
    ),
    "spend": Operation(
        "GET", "/api/v1/billing/spend/", query=("tenant",),
        fields=("tenant", "currency", "month_start", "as_of", "spent", "estimate", "forecast",
                "budget", "budget_percent", "budget_state", "lines"),
    ),
    "workloads.list": Operation(
        "GET", "/api/v1/workloads/", query=("tenant", "kind", "status", "cluster", "label", *PAGE),
        fields=WORKLOAD_FIELDS, paginated=True,
    ),
    "workloads.get": Operation("GET", "/api/v1/workloads/{id}/", fields=WORKLOAD_FIELDS),
    "workloads.launch": Operation(
        "POST", "/api/v1/workloads/", body=("tenant", "kind", "name", "spec", "cluster", "label"),
        fields=WORKLOAD_FIELDS,
    ),
    "workloads.scale": Operation("POST", "/api/v1/workloads/{id}/scale/", body=("changes",),
                                 fields=WORKLOAD_FIELDS),
    "workloads.power": Operation("POST", "/api/v1/workloads/{id}/power/", body=("action",),
                                 fields=WORKLOAD_FIELDS),
    "workloads.delete": Operation("DELETE", "/api/v1/workloads/{id}/", fields=WORKLOAD_FIELDS),
    "workloads.kubeconfig": Operation("GET", "/api/v1/workloads/{id}/kubeconfig/",
                                      media="application/yaml"),
    "invoices.list": Operation(
        "GET", "/api/v1/billing/invoices/", query=("tenant", "period", "status", *PAGE),
        fields=INVOICE_FIELDS, paginated=True,
    ),
    "invoices.get": Operation("GET", "/api/v1/billing/invoices/{id}/", fields=INVOICE_FIELDS),
    "invoices.pdf": Operation("GET", "/api/v1/billing/invoices/{id}/export.pdf",
                              media="application/pdf"),
    "invoices.csv": Operation("GET", "/api/v1/billing/invoices/{id}/export.csv",
                              media="text/csv"),
    "invoices.xlsx": Operation(
        "GET", "/api/v1/billing/invoices/{id}/export.xlsx",
        media="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ),
}

# The workload statuses `wait` knows (the API's WorkloadStatusEnum, checked by the tests).
WORKLOAD_STATUSES = ("pending", "provisioning", "ready", "degraded", "failed", "deleting",
                     "deleted")
# The workload kinds (the API's WorkloadKindEnum, checked by the tests).
WORKLOAD_KINDS = ("vcluster", "inference", "vm", "slurm", "notebook")
