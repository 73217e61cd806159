"""A notebook parameter with a value the experiment cannot use: one line that says which cell to edit.

:class:`ParameterError` is a ``ValueError`` whose message names the parameter, its value and the allowed values. In a
Jupyter kernel (JupyterLab, papermill, nbval) IPython shows what ``_render_traceback_`` returns instead of the
traceback: that line and the cell to edit, without the library's frames, which say nothing a reader can act on.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

#: Where every notebook of the collection keeps its parameters (tests/test_notebooks_clean.py checks it).
PARAMETERS_CELL = "the parameters cell (the notebook's first code cell)"


class ParameterError(ValueError):
    """``parameter = value`` is not allowed; ``allowed`` says what is (e.g. ``"choose one of smoke, quick"``)."""

    def __init__(self, parameter: str, value: object, allowed: str):
        self.parameter, self.value, self.allowed = parameter, value, allowed
        super().__init__(f"{parameter} = {value!r}: {allowed}")

    def __reduce__(self):  # raised in a worker process, re-raised in the notebook's
        return type(self), (self.parameter, self.value, self.allowed)

    def _render_traceback_(self) -> list[str]:
        """IPython's hook: the lines shown for this error in place of the traceback."""
        return [f"ParameterError: {self}. Edit {self.parameter} in {PARAMETERS_CELL} and run the notebook again."]


@contextmanager
def parameter(name: str, value: object) -> Iterator[None]:
    """Applying notebook parameter ``name``: a ``ValueError`` raised inside becomes a :class:`ParameterError` naming it
    (the error's own message says what is allowed)."""
    try:
        yield
    except ParameterError:
        raise
    except ValueError as error:
        raise ParameterError(name, value, str(error)) from None
