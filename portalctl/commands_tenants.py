"""Tenants: list them, choose the current one; its quota and this month's spend."""

from __future__ import annotations

from typing import Annotated

import typer

from .output import Format, OutputOption, emit, say
from .session import command, signed_in

tenants_app = typer.Typer(help="The tenants you may see, and the current one.",
                          no_args_is_help=True)

TenantOption = Annotated[str, typer.Option("--tenant", "-t", help="A tenant's slug (default: "
                                           "the current tenant, see portalctl tenants use).")]
TENANT_COLUMNS = ("slug", "name", "status", "isolation", "cost_center")
QUOTA_COLUMNS = ("resource", "label", "cluster", "limit", "used", "temporary", "ends_on")
SPEND_COLUMNS = ("tenant", "currency", "spent", "estimate", "forecast", "budget",
                 "budget_percent", "budget_state", "as_of")
SPEND_LINE_COLUMNS = ("resource", "label", "hours", "amount")


@tenants_app.command("list")
@command
def tenants_list(output: OutputOption = Format.table) -> None:
    """The tenants you may see (the current one marked in the table)."""
    config, client = signed_in()
    rows = list(client.pages("tenants.list"))
    if output is Format.table:
        rows = [{**row, "slug": f"{row['slug']} *" if row["slug"] == config.tenant
                 else row["slug"]} for row in rows]
    emit(rows, output, columns=TENANT_COLUMNS)


@tenants_app.command("use")
@command
def tenants_use(slug: Annotated[str, typer.Argument(help="The tenant's slug.")],
                output: OutputOption = Format.table) -> None:
    """Make SLUG the current tenant of every later command (kept in the config file)."""
    config, client = signed_in()
    tenant = client.call("tenants.get", slug=slug)
    config.tenant = tenant["slug"]
    config.save()
    say(f"Current tenant: {tenant['slug']} ({tenant['name']}).")
    emit(tenant, output, columns=TENANT_COLUMNS)


@command
def quota(tenant: TenantOption = "", output: OutputOption = Format.table) -> None:
    """The current tenant's quota: granted per resource class, and in use."""
    config, client = signed_in()
    slug = config.require_tenant(tenant)
    emit(list(client.pages("tenants.quota", slug=slug)), output, columns=QUOTA_COLUMNS,
         title=f"Quota of {slug}")


@command
def spend(tenant: TenantOption = "", output: OutputOption = Format.table) -> None:
    """The current tenant's spend this month, its forecast and budget."""
    config, client = signed_in()
    slug = config.require_tenant(tenant)
    answer = client.call("spend", params={"tenant": slug})
    emit(answer, output, columns=SPEND_COLUMNS, title=f"Spend of {slug} this month")
    if output is Format.table and answer.get("lines"):
        emit(answer["lines"], output, columns=SPEND_LINE_COLUMNS)
