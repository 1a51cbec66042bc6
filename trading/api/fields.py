from __future__ import annotations

from rest_framework import serializers

from trading import edge


def desk_date(value, name: str):
    """A date inside the desk's window (DATE_FLOOR to today): 0001-01-01 and 9999-12-31 overflowed
    the features' date arithmetic, and a run as of a day to come has nothing to read."""
    try:
        return edge.check_date(value, name)
    except edge.InputInvalid as problem:
        raise serializers.ValidationError(str(problem)) from None


class CommentField(serializers.CharField):
    """Free text a person types: the one limit (``edge.MAX_COMMENT_CHARS``, ``maxLength`` in the
    schema) refused with the same words as on the page, before DRF's own length message."""

    def __init__(self, *, what: str, **kwargs) -> None:
        self.what = what
        super().__init__(max_length=edge.MAX_COMMENT_CHARS, **kwargs)

    def to_internal_value(self, data) -> str:
        value = super().to_internal_value(data)
        try:
            return edge.check_comment(value, self.what)
        except edge.InputInvalid as problem:
            raise serializers.ValidationError(str(problem)) from None
