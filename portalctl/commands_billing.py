"""Invoices (finance, and tenants their own): list them, download one as PDF, CSV or XLSX."""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from .exits import CliError, Exit
from .output import Format, OutputOption, emit, say
from .session import command, signed_in

invoices_app = typer.Typer(help="Invoices: list and download.", no_args_is_help=True)

INVOICE_COLUMNS = ("id", "number", "tenant", "period_start", "status", "currency", "total",
                   "balance_due", "due_date")


class FileFormat(StrEnum):
    pdf = "pdf"
    csv = "csv"
    xlsx = "xlsx"


@invoices_app.command("list")
@command
def invoices_list(
    tenant: Annotated[str, typer.Option("--tenant", "-t", help="Only this tenant's.")] = "",
    period: Annotated[str, typer.Option(help="Only this month: YYYY-MM.")] = "",
    status: Annotated[str, typer.Option(help="Only this status: draft, issued, paid, "
                                        "void.")] = "",
    output: OutputOption = Format.table,
) -> None:
    """The invoices you may see (finance: every tenant's), newest first."""
    _, client = signed_in()
    params = {"tenant": tenant, "period": period, "status": status}
    emit(list(client.pages("invoices.list", params=params)), output, columns=INVOICE_COLUMNS)


@invoices_app.command("download")
@command
def invoices_download(
    invoice: Annotated[int, typer.Argument(help="The invoice's id (see invoices list).")],
    format_: Annotated[FileFormat, typer.Option("--format", "-F", help="pdf, csv or xlsx.")] = (
        FileFormat.pdf),
    out: Annotated[Path | None, typer.Option("--out", help="Where to write it (default: the "
                                             "portal's file name, here).")] = None,
    output: OutputOption = Format.table,
) -> None:
    """Download one invoice as a file."""
    _, client = signed_in()
    response = client.request(f"invoices.{format_.value}", id=invoice)
    disposition = response.headers.get("Content-Disposition", "")
    match = re.search(r'filename="?([^";]+)"?', disposition)
    name = Path(match.group(1)).name if match else f"invoice-{invoice}.{format_.value}"
    target = out or Path(name)
    if target.is_dir():
        target = target / name
    try:
        target.write_bytes(response.content)
    except OSError as exc:
        raise CliError(f"Cannot write {target}: {exc}", Exit.ERROR) from exc
    say(f"Wrote {target} ({len(response.content)} bytes).")
    emit({"invoice": invoice, "format": format_.value, "file": str(target),
          "bytes": len(response.content)}, output)
