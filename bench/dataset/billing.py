"""Billing: rates, invoices with lines, credit notes, sequences, metering windows, usage."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal

from django.db import connection

from billing.models import (
    CreditNote,
    DocumentSequence,
    Invoice,
    InvoiceLine,
    MeteringWindow,
    Payment,
    Rate,
    UsageRecord,
)
from inventory import resource_classes

from .copying import TableWriter
from .plan import (
    INVOICE_MONTHS,
    MONEY_CENT,
    NODE_PLAN,
    add_months,
)


class BillingTables(TableWriter):

    def rates(self) -> int:
        gpu_price = {model: price for model, _, _, _, price in NODE_PLAN}
        self.rate_card: dict[str, Decimal] = {}
        for key in resource_classes.all_keys():
            rc = resource_classes.parse(key)
            if rc.kind == "gpu":
                price = gpu_price[rc.gpu_model.key]
            elif rc.kind == "mig":
                slices = int(rc.mig_profile.split("g.", 1)[0])
                price = (gpu_price[rc.gpu_model.key] * slices / 7).quantize(Decimal("0.000001"))
            elif rc.kind == "hami":
                share = rc.gpu_model.memory_gib if rc.hami_counter == "memory-gib" else 100
                price = (gpu_price[rc.gpu_model.key] / share).quantize(Decimal("0.000001"))
            elif rc.kind == "count":
                price = Decimal("0.050000")
            else:
                price = {"cpu": Decimal("0.030000"), "memory-gib": Decimal("0.004000"),
                         "storage-gib": Decimal("0.000100")}[key]
            self.rate_card[key] = price
        valid_from = add_months(self.anchor, -INVOICE_MONTHS - 1)
        return self._copy(Rate, (
            {"id": i + 1, "resource": key, "unit_price": price, "unit": "hour",
             "valid_from": valid_from, "note": "List price", "created_at": valid_from}
            for i, (key, price) in enumerate(self.rate_card.items())
        ))

    def invoices(self) -> int:
        """Twelve months of invoices per tenant: the last month issued or still draft, older
        months paid (some still issued: overdue), numbered INV-YYYY-NNNN per year."""
        rng = self.rng
        self.invoice_plan: list[tuple[int, int, datetime.datetime, datetime.datetime]] = []
        self.sequences: dict[int, int] = {}
        rows = []
        months = [add_months(self.anchor, -m) for m in range(INVOICE_MONTHS, 0, -1)]
        for index, start in enumerate(months):
            end = add_months(start, 1)
            last_month = index == len(months) - 1
            for tenant_id in self.tenant_slugs:
                invoice_id = len(rows) + 1
                roll = rng.random()
                if last_month:
                    status = "draft" if roll < 0.3 else "issued"
                else:
                    status = "issued" if roll < 0.05 else "paid"
                number = issue_date = due_date = None
                if status != "draft":
                    year = end.year
                    self.sequences[year] = self.sequences.get(year, 0) + 1
                    number = f"INV-{year}-{self.sequences[year]:04d}"
                    issue_date = end.date()
                    due_date = issue_date + datetime.timedelta(days=30)
                lines = self._invoice_lines(tenant_id, start, end)
                subtotal = sum(amount for *_, amount in lines)
                discount_percent = Decimal("5.00") if tenant_id % 10 == 0 else Decimal("0")
                discount = (subtotal * discount_percent / 100).quantize(MONEY_CENT, ROUND_HALF_UP)
                # What `credit_notes` and `payments` write, summed as the services would.
                credited = (self._credit_amount(subtotal)
                            if self._credited(invoice_id, end) else Decimal("0"))
                rows.append({
                    "id": invoice_id, "tenant_id": tenant_id, "period_start": start,
                    "period_end": end, "status": status,
                    "tenant_name": self.tenant_names[tenant_id],
                    "cost_center": f"CC-{1000 + tenant_id}",
                    "currency": "EUR", "discount_percent": discount_percent,
                    "subtotal": subtotal, "discount": discount, "tax": Decimal("0"),
                    "total": subtotal - discount, "computed_at": end, "number": number,
                    "issue_date": issue_date, "due_date": due_date,
                    "issued_at": end + datetime.timedelta(hours=6) if number else None,
                    "issued_by_id": 3 if number else None,
                    "paid_at": end + datetime.timedelta(days=20) if status == "paid" else None,
                    "paid_by_id": 3 if status == "paid" else None,
                    "payment_reference": f"SEPA-{invoice_id:08d}" if status == "paid" else "",
                    "amount_credited": credited,
                    "amount_paid": subtotal - discount if status == "paid" else Decimal("0"),
                    "created_at": end,
                })
                self.invoice_plan.append((invoice_id, tenant_id, start, end))
                self.__dict__.setdefault("_lines", {})[invoice_id] = lines
        return self._copy(Invoice, rows)

    def _invoice_lines(self, tenant_id: int, start, end) -> list[tuple[str, int, Decimal]]:
        rng = self.rng
        hours = int((end - start).total_seconds() // 3600)
        resources = [f"gpu:{self.tenant_model[tenant_id]}", "cpu", "memory-gib", "storage-gib"]
        lines = []
        for resource in resources:
            units = {"cpu": 64, "memory-gib": 512, "storage-gib": 2000}.get(resource, 4)
            unit_hours = units * hours * rng.randint(20, 100) // 100
            amount = (self.rate_card[resource] * unit_hours).quantize(MONEY_CENT, ROUND_HALF_UP)
            lines.append((resource, unit_hours, amount))
        return lines

    def invoice_lines(self) -> int:
        def rows() -> Iterator[dict]:
            line_id = 0
            lines = self.__dict__["_lines"]
            for invoice_id, _, start, end in self.invoice_plan:
                for position, (resource, unit_hours, amount) in enumerate(lines[invoice_id]):
                    line_id += 1
                    label = resource_classes.parse(resource).label
                    yield {
                        "id": line_id, "invoice_id": invoice_id, "position": position,
                        "kind": "usage", "resource": resource,
                        "description": f"{label}, {start:%B %Y}",
                        "period_start": start, "period_end": end,
                        "unit_seconds": unit_hours * 3600,
                        "quantity_hours": Decimal(unit_hours), "quantity": Decimal(unit_hours),
                        "unit": "hour", "unit_price": self.rate_card[resource],
                        "amount": amount, "events": [],
                    }
        return self._copy(InvoiceLine, rows())

    def credit_notes(self) -> int:
        """A credit note on one issued invoice in a hundred (numbered CN-YYYY-NNNN)."""
        self.credit_sequences: dict[int, int] = {}
        rows = []
        for invoice_id, _, _, end in self.invoice_plan:
            if not self._credited(invoice_id, end):
                continue
            issued = (end + datetime.timedelta(days=25)).date()
            self.credit_sequences[issued.year] = self.credit_sequences.get(issued.year, 0) + 1
            subtotal = sum(amount for *_, amount in self.__dict__["_lines"][invoice_id])
            rows.append({
                "id": len(rows) + 1, "invoice_id": invoice_id,
                "number": f"CN-{issued.year}-{self.credit_sequences[issued.year]:04d}",
                "amount": self._credit_amount(subtotal),
                "reason": "Downtime credit: node maintenance overran its window.",
                "issue_date": issued, "created_by_id": 3,
                "created_at": end + datetime.timedelta(days=25),
            })
        return self._copy(CreditNote, rows)

    def _credited(self, invoice_id: int, end) -> bool:
        return invoice_id % 100 == 7 and end < self.anchor

    @staticmethod
    def _credit_amount(subtotal: Decimal) -> Decimal:
        return max(MONEY_CENT, (subtotal / 10).quantize(MONEY_CENT, ROUND_HALF_UP))

    def payments(self) -> int:
        """One payment of its whole total per paid invoice, on the day it was paid (credit
        notes come five days later: those invoices are over-settled, a refund owed)."""
        # Read whole before the COPY starts: a query cannot run on the connection beside it.
        paid = list(Invoice.objects.filter(status="paid").order_by("pk").values_list(
            "pk", "amount_paid", "paid_at", "payment_reference"))
        return self._copy(Payment, (
            {"id": i + 1, "invoice_id": pk, "amount": amount, "date": paid_at.date(),
             "reference": reference, "recorded_by_id": 3, "created_at": paid_at}
            for i, (pk, amount, paid_at, reference) in enumerate(paid)
        ))

    def document_sequences(self) -> int:
        sequences = [("INV", year, last) for year, last in sorted(self.sequences.items())]
        sequences += [("CN", year, last) for year, last in sorted(self.credit_sequences.items())]
        return self._copy(DocumentSequence, (
            {"id": i + 1, "prefix": prefix, "year": year, "last": last}
            for i, (prefix, year, last) in enumerate(sequences)
        ))

    def _usage_month(self) -> tuple[datetime.datetime, int]:
        start = add_months(self.anchor, -1)
        return start, int((self.anchor - start).total_seconds() // 3600)

    def metering_windows(self) -> int:
        start, hours = self._usage_month()
        return self._copy(MeteringWindow, (
            {"id": h + 1, "source": "allocated", "hour": start + datetime.timedelta(hours=h),
             "status": "done", "attempts": 1, "records": self.sizes.metered_workloads,
             "metered_at": start + datetime.timedelta(hours=h + 1, minutes=5)}
            for h in range(hours)
        ))

    def usage_records(self) -> int:
        """One allocated row per metered workload and hour of last month: the biggest table, so
        written as COPY text by hand, with its secondary indexes built once afterwards. The
        usage explorer's sums per day (`UsageDaily`) are written by the table's trigger, from
        the COPY's rows, in the same statement."""
        start, hours = self._usage_month()
        stamps = [(start + datetime.timedelta(hours=h)).isoformat() for h in range(hours)]
        metered = [(start + datetime.timedelta(hours=h + 1, minutes=5)).isoformat()
                   for h in range(hours)]
        step = max(1, self.sizes.workloads // self.sizes.metered_workloads)
        chosen = self.workload_rows[::step][: self.sizes.metered_workloads]
        table = UsageRecord._meta.db_table
        columns = ("id", "tenant_id", "workload_id", "hostname", "source", "resource", "hour",
                   "unit_seconds", "busy_seconds", "metered_at")
        count = 0
        quote = connection.ops.quote_name
        with connection.cursor() as cursor:
            # Foreign keys and secondary indexes are dropped for the load and made again after
            # it: one pass each over 7 million rows instead of a check and an insert per row.
            # Altering a table is refused while checks of the rows before are pending: run them.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(
                "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
                "WHERE conrelid = %s::regclass AND contype = 'f'", [table])
            foreign_keys = cursor.fetchall()
            for name, _ in foreign_keys:
                cursor.execute(f"ALTER TABLE {quote(table)} DROP CONSTRAINT {quote(name)}")
            cursor.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s AND indexname "
                "NOT IN (SELECT conname FROM pg_constraint)", [table])
            secondary = cursor.fetchall()
            for name, _ in secondary:
                cursor.execute(f"DROP INDEX {quote(name)}")
            with cursor.cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for workload_id, tenant_id, _, demand, _, _ in chosen:
                    gpu = next((k for k in demand if not k.startswith(("count:", "cpu",
                                                                       "memory", "storage"))),
                               "cpu")
                    seconds = 3600 * max(1, int(demand.get(gpu, 1)))
                    prefix = f"{tenant_id}\t{workload_id}\t\tallocated\t{gpu}\t"
                    chunk = []
                    for h in range(hours):
                        count += 1
                        chunk.append(
                            f"{count}\t{prefix}{stamps[h]}\t{seconds}\t0\t{metered[h]}\n")
                    copy.write("".join(chunk))
            cursor.execute("SET LOCAL maintenance_work_mem = '256MB'")
            for _, definition in secondary:
                cursor.execute(definition)
            for name, definition in foreign_keys:
                cursor.execute(
                    f"ALTER TABLE {quote(table)} ADD CONSTRAINT {quote(name)} {definition}")
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        return count


