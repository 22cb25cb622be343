"""Links of the shared pagination component (templates/portal/_pagination.html)."""

from django import template
from django.http import QueryDict

register = template.Library()


@register.simple_tag(takes_context=True)
def page_query(context, number: int, drop: str = "", params=None) -> str:
    """`?page=<number>&…`: the request's query (its filters) kept, its other names in order,
    without the names in `drop` (space-separated: a partial's own switch, say). `params`: a
    QueryDict to keep instead of the request's (the filters as the view understood them)."""
    request = context.get("request")
    if isinstance(params, QueryDict):
        kept = params
    else:
        kept = request.GET if request is not None else QueryDict()
    dropped = {"page", *drop.split()}
    query = QueryDict(mutable=True)
    query["page"] = str(number)
    for name in sorted(set(kept) - dropped):
        query.setlist(name, kept.getlist(name))
    return f"?{query.urlencode()}"
