"""The invoice PDF reads like an invoice, as finance downloads it: human names of the resource
classes (never their keys), the unit each class counts in, quantities to two places, the GPU
lines first, and long names that wrap inside their cell instead of running over the next one.

Checked on the PDF itself: its text (pypdf), the box of every line of text it draws (pypdf's
visitor gives each line's position and font; ReportLab's metrics its width), and its pages
rendered to PNG by poppler's `pdftoppm` (Debian's poppler-utils), kept under
artifacts/screenshots/ for a person to look at."""

import io
import re
import shutil
import subprocess
from datetime import UTC, date, datetime
from decimal import Decimal
from itertools import combinations
from pathlib import Path
from typing import NamedTuple

import pytest
from PIL import Image
from pypdf import PdfReader
from reportlab.pdfbase.pdfmetrics import stringWidth

from billing.calculations.invoicing import quantity_unit
from billing.models import Rate, UsageRecord
from billing.services import invoicing
from inventory import resource_classes
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db

SCREENSHOT_DIR = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
LONG_NAME = "Institut für Hochleistungsrechnen und Maschinelles Lernen " + "X" * 40
LONG_COST_CENTER = "CC-" + "9" * 46
MM = 72 / 25.4
PAGE_LEFT, PAGE_RIGHT = 16 * MM, (210 - 16) * MM  # the page's margins (16 mm each side)

# Class → (price, rate unit, unit-seconds an hour held, what its line prints).
CLASSES = {
    "storage-gib": ("0.10", "month", 500 * 3600, "Storage (GiB)"),
    "cpu": ("0.02", "hour", 64 * 3600, "vCPU"),
    "hami:nvidia-l40s:cores": ("0.01", "hour", 50 * 3600,
                               "NVIDIA L40S HAMi GPU compute (% of a GPU)"),
    "hami:nvidia-l40s:memory-gib": ("0.02", "hour", 24 * 3600 + 1,
                                    "NVIDIA L40S HAMi GPU memory (GiB)"),
    "mig:nvidia-a100-80gb:1g.10gb": ("0.45", "hour", 3 * 3600, "NVIDIA A100 SXM4 80GB MIG 1g.10gb"),
    "gpu:nvidia-h200": ("3.00", "hour", 8 * 3600 + 36, "NVIDIA H200 141GB GPUs"),
}
HOURS = 7  # each class held for the first 7 hours of January


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.fixture
def pdf(login, finance) -> bytes:
    """A January draft of a tenant with a long name, over every kind of class, as finance
    downloads it."""
    tenant = TenantFactory(slug="hlrs-ml", name=LONG_NAME)
    type(tenant).objects.filter(pk=tenant.pk).update(cost_center=LONG_COST_CENTER)
    tenant.refresh_from_db()
    for resource, (price, unit, seconds, _) in CLASSES.items():
        Rate.objects.create(resource=resource, unit_price=Decimal(price), unit=unit,
                            valid_from=utc(2025, 1, 1))
        for hour in range(HOURS):
            UsageRecord.objects.create(tenant=tenant, source=UsageRecord.Source.ALLOCATED,
                                       resource=resource, hour=utc(2026, 1, 1, hour),
                                       unit_seconds=seconds)
    draft = invoicing.invoice_compute(tenant=tenant, month=date(2026, 1, 1))
    response = login(finance).get(f"/billing/invoices/{draft.pk}/invoice.pdf")
    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    return response.content


def _text(pdf: bytes) -> str:
    """The PDF's text with every run of white space one space (a wrapped cell reads on)."""
    pages = PdfReader(io.BytesIO(pdf)).pages
    return re.sub(r"\s+", " ", " ".join(page.extract_text() for page in pages))


def test_the_pdf_names_each_class_and_counts_it_in_its_own_unit(pdf):
    text = _text(pdf)

    for resource, (*_, label) in CLASSES.items():
        assert label in text
        assert resource not in text  # the key is no name for a reader
    # 7 hours: 56.07 GPU-hours (8.01 GPUs an hour), 21 MIG instance-hours, 350 compute units
    # (50 % of a GPU) and 168.001944 GiB-hours of GPU memory under HAMi, 448 vCPU-hours, and
    # 500 GiB for 7 of January's 744 hours: 4.704301 GiB-months.
    for quantity, unit in (("56.07", "GPU-hours"), ("21.00", "MIG instance-hours"),
                           ("350.00", "HAMi compute unit-hours"),
                           ("168.00", "HAMi memory GiB-hours"), ("448.00", "vCPU-hours"),
                           ("4.70", "GiB-months")):
        assert f"{quantity} {unit}" in text
    assert "168.001944" not in text and "4.704301" not in text  # two places, not six
    assert LONG_COST_CENTER[:20] in text
    # Whole GPUs first, then MIG and HAMi shares, then CPU and storage.
    order = [text.index(CLASSES[key][3]) for key in (
        "gpu:nvidia-h200", "mig:nvidia-a100-80gb:1g.10gb", "hami:nvidia-l40s:cores",
        "hami:nvidia-l40s:memory-gib", "cpu", "storage-gib")]
    assert order == sorted(order)
    assert "Amount (EUR)" in text and "168.21" in text  # 56.07 GPU-hours at 3.00


class Box(NamedTuple):
    """One line of text as drawn: its cell's left edge and the box its glyphs fill."""

    text: str
    cell_x: float
    x0: float
    x1: float
    y0: float
    y1: float


def _boxes(page) -> list[Box]:
    boxes: list[Box] = []

    def visit(text, cm, tm, font, size):
        text = text.rstrip("\n")
        if not text.strip():
            return
        # The standard PDF fonts xhtml2pdf draws in (Helvetica, bold): ReportLab's widths.
        name = str(font["/BaseFont"]).lstrip("/")
        x = cm[4] + tm[4] * cm[0]
        y = cm[5] + tm[5] * cm[3]
        width = stringWidth(text, name, size)
        boxes.append(Box(text, cm[4], x, x + width, y - 0.2 * size, y + 0.8 * size))

    page.extract_text(visitor_text=visit)
    return boxes


def _overlap(a: Box, b: Box) -> bool:
    # Touching is not overlapping: a tenth of a point of slack for rounding.
    return min(a.x1, b.x1) - max(a.x0, b.x0) > 0.1 and min(a.y1, b.y1) - max(a.y0, b.y0) > 0.1


def test_no_text_runs_over_another_column_or_off_the_page(pdf):
    pages = PdfReader(io.BytesIO(pdf)).pages
    boxes = [box for page in pages for box in _boxes(page)]
    # The long name and cost center are there, wrapped over several lines of their cell.
    assert len(pages) >= 1 and "X" * 20 in "".join(box.text for box in boxes)

    for page in pages:
        drawn = _boxes(page)
        assert not [(a.text, b.text) for a, b in combinations(drawn, 2) if _overlap(a, b)]
        assert all(box.x0 >= PAGE_LEFT - 0.5 and box.x1 <= PAGE_RIGHT + 0.5 for box in drawn)

    # The lines table: every line of a cell stays within its column, whose left edge is its
    # heading's cell and whose right edge is the next column's.
    first = _boxes(pages[0])
    header_y = next(box.y0 for box in first if box.text == "Description")
    heads = [box for box in first if abs(box.y0 - header_y) < 0.5]
    assert [box.text for box in heads] == [
        "Description", "Period", "Quantity", "Unit", "Unit price", "Amount (EUR)"]
    columns = sorted(box.cell_x for box in heads)
    edges = dict(zip(columns, [*columns[1:], PAGE_RIGHT], strict=True))
    table = [box for box in first if box.y1 <= header_y and box.cell_x in edges]
    assert len(table) > 6 * len(CLASSES)
    for box in table:
        assert box.cell_x - 0.5 <= box.x0 and box.x1 <= edges[box.cell_x], box.text
    # The facts at the head: the tenant's name wraps before the "Issue date" label.
    label = next(box for box in first if box.text == "Issue date")
    name_lines = [box for box in first if box.y0 > header_y and (
        "XXXX" in box.text or "Hochleistungs" in box.text)]
    assert len(name_lines) >= 2 and all(box.x1 <= label.x0 for box in name_lines)


def test_the_pdf_renders_to_pages_with_nothing_in_the_margins(pdf, tmp_path):
    # pdftoppm is Debian's poppler-utils, installed by `make debian-packages`.
    (tmp_path / "invoice.pdf").write_bytes(pdf)
    subprocess.run(["pdftoppm", "-r", "60", "-png", str(tmp_path / "invoice.pdf"),
                    str(tmp_path / "page")], check=True, timeout=60)
    pngs = sorted(tmp_path.glob("page-*.png"))

    assert len(pngs) == len(PdfReader(io.BytesIO(pdf)).pages)
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    for number, png in enumerate(pngs, start=1):
        shutil.copy(png, SCREENSHOT_DIR / f"invoice-pdf-page-{number}.png")
        image = Image.open(png).convert("L")
        width, height = image.size
        margin = int(14 * 60 / 25.4)  # 14 mm: inside the 16 mm margins, with slack
        ink = [image.crop(box).getextrema()[0] for box in (
            (0, 0, margin, height), (width - margin, 0, width, height))]
        assert min(ink) > 200, "something is drawn in a side margin"
        # And the page has content: dark text somewhere in its body.
        assert image.crop((margin, 0, width - margin, height)).getextrema()[0] < 100



def test_every_class_of_the_vocabulary_counts_in_a_unit_of_its_own():
    units = {key: quantity_unit(key, "hour") for key in resource_classes.all_keys()}

    assert "unit-hours" not in units.values()  # only a class outside the vocabulary
    assert units["gpu:nvidia-h200"] == "GPU-hours"
    assert units["mig:nvidia-h100-80gb:1g.10gb"] == "MIG instance-hours"
    assert units["hami:nvidia-l40s:cores"] == "HAMi compute unit-hours"
    assert units["hami:nvidia-l40s:memory-gib"] == "HAMi memory GiB-hours"
    assert units["count:vm"] == "VM-hours"
    assert quantity_unit("storage-gib", "month") == "GiB-months"
    assert quantity_unit("hami-core:nvidia-h100-80gb", "hour") == "unit-hours"
