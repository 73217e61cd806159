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


#: The line an interrupted cell shows (Kernel > Interrupt, or the stop button) in place of a traceback.
INTERRUPTED = ("Interrupted: the cell stopped where you interrupted it. Runs that finished are saved and load at "
               "once when you run the cell again; live LLM replies already received are recorded.")


def one_line_interrupts() -> bool:
    """In a Jupyter kernel, show an interrupted cell as the one line :data:`INTERRUPTED` instead of a traceback
    through torch and transformers (dozens of frames that say nothing a reader can act on). Returns whether it is
    installed (False outside a kernel). IPython keeps one such handler per shell: this replaces any other."""
    import sys

    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or not hasattr(shell, "kernel"):
        return False

    def one_line(shell, etype, value, tb, tb_offset=None) -> None:
        value._render_traceback_ = lambda: [INTERRUPTED]  # what IPython shows for an error that has it
        shell.showtraceback((etype, value, tb))

    shell.set_custom_exc((KeyboardInterrupt,), one_line)
    return True
