"""The run form: the page's side of ``start.run_request``, the one check the API makes too."""

from __future__ import annotations

from typing import Any

from django import forms

from trading.pipeline.start import RunRequest, RunRequestInvalid, run_request


class RunStartForm(forms.Form):
    """Instruments (the checkboxes the page sends, one ``symbols`` value each), an optional as-of
    date and a provider. The fields only read what was sent: every check is ``run_request``'s, so
    a value the API refuses is refused here with the same words, shown next to its field."""

    symbols = forms.Field(required=False, widget=forms.CheckboxSelectMultiple)
    as_of = forms.Field(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    provider = forms.Field(required=False, widget=forms.Select)

    checked: RunRequest | None = None  # the request to start, once the form is valid

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        try:
            self.checked = run_request(
                symbols=data.get("symbols"), as_of=data.get("as_of"), provider=data.get("provider")
            )
        except RunRequestInvalid as refusal:
            for name, problems in refusal.details.items():
                for problem in problems:
                    self.add_error(name if name in self.fields else None, problem)
        return data

    def chosen_symbols(self) -> set[str]:
        """The symbols the person ticked, kept ticked when the form comes back refused."""
        return {str(symbol).upper() for symbol in (self["symbols"].value() or [])}
