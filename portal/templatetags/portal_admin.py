"""Django admin's changelist table with rows planned per column (see portal.admin_rows)."""

from django import template

from portal.admin_rows import result_list_context

register = template.Library()


@register.inclusion_tag("admin/change_list_results.html")
def planned_result_list(cl) -> dict:
    """Django's `{% result_list cl %}`, the same HTML, without the per-cell lookups."""
    return result_list_context(cl)
