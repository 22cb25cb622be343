"""The API's request parsers."""

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class PortalJSONParser(JSONParser):
    """DRF's JSON parser, with nesting too deep for the decoder a parse error (400).

    The stdlib decoder recurses once per nested array or object; a few thousand `[` exhaust the
    interpreter's stack and raise RecursionError, which DRF does not catch."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the document is nested too deeply.") from None
