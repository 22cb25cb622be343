"""select_options (portal_format) writes a filter select's options from its template: each
value and label escaped, the chosen ones marked."""

from django.template import engines

TAG = engines["django"].from_string(
    "{% load portal_format %}{% select_options choices selected skip_blank=skip %}"
)


def _options(choices, selected, skip=False) -> str:
    return TAG.render({"choices": choices, "selected": selected, "skip": skip})


def test_each_value_and_label_is_escaped_and_the_chosen_one_marked():
    choices = [("a", "A"), ("<b>", "\"B\" & 'b'"), ("", "none")]
    assert _options(choices, "<b>") == (
        '<option value="a">A</option>'
        '<option value="&lt;b&gt;" selected>&quot;B&quot; &amp; &#x27;b&#x27;</option>'
        '<option value="">none</option>'
    )
    assert _options(choices, None).count(" selected") == 0
    assert _options(choices, "").count(" selected") == 1


def test_several_chosen_values_a_value_its_own_label_and_blank_choices_left_out():
    written = _options([("", "---"), "x", ("y", "Y"), ("z", "Z")], ["x", "z"], skip=True)
    assert written == ('<option value="x" selected>x</option><option value="y">Y</option>'
                       '<option value="z" selected>Z</option>')
    # A chosen value is never a substring match: "x" is not in the value "xy".
    assert _options([("xy", "XY")], "x") == '<option value="xy">XY</option>'
