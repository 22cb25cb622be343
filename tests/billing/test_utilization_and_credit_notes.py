"""Idle GPU time and utilization per tenant and class; credit notes limited to their invoice."""

from decimal import Decimal

import pytest

from billing.calculations import CreditNoteError, check_credit_note, idle_gpu_seconds, utilization

H200 = "gpu:nvidia-h200"
L40S = "gpu:nvidia-l40s"
ALLOCATED = {("acme", H200): 7200, ("acme", L40S): 3600, ("globex", H200): 3600}
MEASURED = {("acme", H200): 5400, ("acme", L40S): 4000}  # L40S measured above its reservation


def test_idle_time_is_allocated_minus_measured_and_never_negative():
    assert idle_gpu_seconds(allocated=ALLOCATED, measured=MEASURED) == {
        ("acme", H200): 1800,
        ("acme", L40S): 0,  # 3 600 - 4 000 clamps to 0, it does not hide idle time elsewhere
        ("globex", H200): 3600,  # nothing measured: all of it idle
    }


def test_utilization_is_the_share_of_allocated_time_in_use():
    # in use: 5 400 + 3 600 (clamped) + 0 = 9 000 of 14 400 = 0.625
    assert utilization(allocated=ALLOCATED, measured=MEASURED) == Decimal("0.6250")
    # 5 400 of 7 200 = 0.75; 1 of 3 = 0.3333
    assert utilization(allocated={H200: 7200}, measured={H200: 5400}) == Decimal("0.7500")
    assert utilization(allocated={H200: 3}, measured={H200: 1}) == Decimal("0.3333")


def test_nothing_allocated_has_no_utilization():
    assert utilization(allocated={}, measured={H200: 10}) is None
    assert utilization(allocated={H200: 0}, measured={}) is None


def test_a_credit_note_up_to_what_is_left_of_the_invoice_is_accepted():
    left = check_credit_note(
        invoice_total=Decimal("100.00"), already_credited=Decimal("30.00"), amount=Decimal("70.00")
    )

    assert left == Decimal("0.00")


@pytest.mark.parametrize(
    ("amount", "message"),
    [
        ("70.01", r"more than is left of the invoice \(70.00 of 100.00\)"),
        ("0", "positive amount"),
        ("-5.00", "positive amount"),
        ("0.001", "whole cents"),
    ],
)
def test_a_credit_note_larger_than_its_invoice_or_not_positive_is_refused(amount, message):
    with pytest.raises(CreditNoteError, match=message):
        check_credit_note(
            invoice_total=Decimal("100.00"),
            already_credited=Decimal("30.00"),
            amount=Decimal(amount),
        )


def test_a_float_credit_is_refused():
    with pytest.raises(TypeError, match="not float"):
        check_credit_note(invoice_total=Decimal("1"), already_credited=Decimal("0"), amount=0.5)
