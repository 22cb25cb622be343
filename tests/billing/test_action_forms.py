"""The invoice page's action forms: written through their template; a form with errors or values
shows them, and the next unbound form does not."""

from django.template import engines

from billing.forms import CreditNoteForm, PaymentForm, VoidForm


def _fields_template(form) -> str:
    """The form written through the template itself."""
    template = engines["django"].get_template("billing/finance/_form_fields.html")
    return template.render({"form": form})


def test_an_unbound_form_is_written_as_its_template_writes_it():
    for form_class in (PaymentForm, VoidForm, CreditNoteForm):
        assert str(form_class()) == _fields_template(form_class())


def test_errors_are_shown_and_not_kept_for_the_next_unbound_form():
    str(CreditNoteForm())
    refused = CreditNoteForm({"amount": "-1", "reason": ""})
    assert not refused.is_valid()
    html = str(refused)
    assert 'value="-1"' in html and "is-invalid" in html and 'aria-invalid="true"' in html
    assert "A credit note credits a positive amount." in html
    assert "Say what the credit corrects." in html

    fresh = str(CreditNoteForm())
    assert "is-invalid" not in fresh and 'value="-1"' not in fresh
    assert fresh == _fields_template(CreditNoteForm())


def test_initial_values_and_prefixes_are_written_each_time():
    assert 'value="SEPA-1"' in str(PaymentForm(initial={"reference": "SEPA-1"}))
    assert 'value="SEPA-1"' not in str(PaymentForm())
    assert 'name="second-reason"' in str(VoidForm(prefix="second"))
    assert 'name="reason"' in str(VoidForm())
