"""select_options (portal_format) writes a filter select's options as a template loop would."""

from django.template import engines

from portal.templatetags.portal_format import select_options

LOOP = engines["django"].from_string(
    '{% for value, label in choices %}<option value="{{ value }}"{% if value == selected %}'
    ' selected{% endif %}>{{ label }}</option>{% endfor %}'
)


def test_the_options_are_the_loops_each_value_and_label_escaped():
    choices = [("a", "A"), ("<b>", "\"B\" & 'b'"), ("", "none")]
    for selected in ["a", "<b>", "", None, "zz"]:
        assert select_options(choices, selected) == LOOP.render(
            {"choices": choices, "selected": selected}
        )


def test_several_chosen_values_a_value_its_own_label_and_blank_choices_left_out():
    written = select_options([("", "---"), "x", ("y", "Y"), ("z", "Z")], ["x", "z"],
                             skip_blank=True)
    assert written == ('<option value="x" selected>x</option><option value="y">Y</option>'
                       '<option value="z" selected>Z</option>')
    # A chosen value is never a substring match: "x" is not in the value "xy".
    assert select_options([("xy", "XY")], "x") == '<option value="xy">XY</option>'
