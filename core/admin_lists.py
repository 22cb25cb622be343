"""What the admin's long lists share: each row's link and action checkbox cost a string
formatting and one small template, not a URL reversal and resolution and a form widget drawn
from three nested templates."""

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.contrib.admin.views.main import ChangeList
from django.template.loader import get_template

from .links import url_around


class RowLinksChangeList(ChangeList):
    """Each row's change link from the change URL reversed once per page (this ChangeList lives
    for one request), the list's filters added to it here: given them, the admin would resolve
    every row's URL to learn that it is not the list's own."""

    def __init__(self, request, *args, **kwargs):
        super().__init__(request, *args, **kwargs)
        self.row_query, self.preserved_filters = self.preserved_filters, ""

    def url_for_result(self, result) -> str:
        if not hasattr(self, "_change_url"):
            self._change_url = url_around(
                f"admin:{self.opts.app_label}_{self.opts.model_name}_change",
                current_app=self.model_admin.admin_site.name,
            )
        before, after = self._change_url
        query = f"?{self.row_query}" if self.row_query else ""
        return f"{before}{quote(result.pk)}{after}{query}"


class RowCheckboxAdmin(admin.ModelAdmin):
    """The action checkbox of each row from one small template (the markup Django's widget
    writes, its aria-label included)."""

    def action_checkbox(self, obj):
        return get_template("admin/portal/action_checkbox.html").render(
            {"pk": obj.pk, "label": str(obj)}
        )
