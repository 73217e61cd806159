"""Progress of long runs, without widgets: one updating text line in a notebook, lines in the terminal.

``Progress(total, "MARLIN runs")`` counts finished units (runs of a grid, episodes of one training) and
says ``done/total``, the elapsed time and the expected total. Where it goes:

* In a Jupyter kernel (JupyterLab, papermill): one plain-text output that is updated in place
  (``display_id``), so no ipywidgets are needed and no TqdmWarning appears.
* In the terminal under ``make figures``: the recipe sets ``MARLINKIT_PROGRESS_TO`` to the file of
  papermill's standard error (its terminal) and ``MARLINKIT_PROGRESS_LABEL`` to the notebook, so a long
  cell is not silent there. Worker processes inherit both and report their episodes the same way.
* Elsewhere (a script, a worker process): lines on standard error, or standard output for workers of a
  notebook (their output is shown in the cell, and stderr would be drawn red).

In a notebook, one cell keeps one progress line: a later ``Progress`` of the same cell (notebook 04 runs four grids
in one cell) updates the line the first one drew, rather than leaving finished lines above it.

Lines are throttled to one per ``min_interval`` seconds. ``Progress.episodes`` (one training, or the trials of one
run) reports in lines only, none for trainings shorter than its interval; while a live ``Progress`` of this process
is open (a notebook's runs), that one's line also says how far the run in progress is, updated about once a second
(``0/4 runs`` would otherwise stand still until the first run ends).

:func:`waiting` shows a call that blocks for seconds (a live LLM call) from its first second: the open live bar's
line, or a line of its own in the cell, says what it waits for and counts the seconds.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

TO_ENV = "MARLINKIT_PROGRESS_TO"
LABEL_ENV = "MARLINKIT_PROGRESS_LABEL"
#: Set by a notebook's ``Progress`` so that worker processes it spawns write to stdout (shown in the cell).
STREAM_ENV = "MARLINKIT_PROGRESS_STREAM"


def duration(seconds: float) -> str:
    """``75.4`` -> ``"1m15s"``; ``3725`` -> ``"1h02m"``."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def in_notebook() -> bool:
    """True inside a Jupyter kernel (JupyterLab, papermill, nbval), where rich outputs are shown."""
    ipython = sys.modules.get("IPython")  # a kernel has imported it; never imported here for a script
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and hasattr(shell, "kernel")


class Progress:
    """Counts ``total`` units of work; ``update()`` after each one, ``close()`` at the end."""

    #: The open live bars of this process, innermost last: a part (``Progress.episodes``) reports to the last one.
    _live: list["Progress"] = []
    #: Seconds between updates of a live bar's notebook line by its part.
    PART_INTERVAL = 1.0
    #: The cell (its execution count) and the display handle of the last notebook line a bar drew.
    _cell_line: tuple[object, object] | None = None
    #: The same for the line of :func:`waiting` (a live call outside any bar).
    _waiting_line: tuple[object, object] | None = None

    def __init__(self, total: int, desc: str, unit: str = "runs", enabled: bool = True, min_interval: float = 1.0,
                 live: bool = True):
        self.total, self.desc, self.unit, self.enabled = int(total), desc, unit, enabled
        self.min_interval, self.done, self._emitted = min_interval, 0, False
        self.start = self._last = self._last_part = time.perf_counter()  # progress imports nothing heavy
        self._handle = None
        self._part = ""  # the run in progress, as its part reported it
        self._terminal = os.environ.get(TO_ENV) or None
        if not (enabled and live):
            return
        Progress._live.append(self)
        if in_notebook():
            os.environ[STREAM_ENV] = "stdout"
            self._handle = self._cell_handle()
        self._emit(force=True, to_notebook=False)

    def _cell_handle(self):
        """The display this bar's line goes to: the line a finished bar of the same cell drew, else a new one."""
        from IPython import get_ipython
        from IPython.display import display

        cell = get_ipython().execution_count
        last = Progress._cell_line
        if last is not None and last[0] == cell and not any(bar._handle is last[1] for bar in Progress._live):
            last[1].update(self._text_output(), raw=True)
            return last[1]
        handle = display(self._text_output(), raw=True, display_id=True)
        Progress._cell_line = (cell, handle)
        return handle

    @classmethod
    def episodes(cls, total: int, desc: str, enabled: bool = True, min_interval: float = 10.0,
                 unit: str = "episodes") -> "Progress":
        """Episodes done within one training (or trials of one run): a line every ``min_interval`` seconds, none for
        short ones; and the open live bar's notebook line, if any, about once a second."""
        return cls(total, desc, unit=unit, enabled=enabled, min_interval=min_interval, live=False)

    def line(self) -> str:
        elapsed = time.perf_counter() - self.start
        label = os.environ.get(LABEL_ENV)
        text = (f"{label + ': ' if label else ''}{self.desc} {self.done}/{self.total} {self.unit}, "
                f"elapsed {duration(elapsed)}")
        if 0 < self.done < self.total:
            text += f", expected ~{duration(elapsed * self.total / self.done)} in all"
        if self._part and self.done < self.total:
            text += f"; now {self._part}"
        return text

    def _show_part(self, part: "Progress") -> None:
        """A part of the run in progress moved: say so in this bar's notebook line (throttled)."""
        now = time.perf_counter()
        self._part = f"{part.desc}: {part.done}/{part.total} {part.unit}"
        if self._handle is not None and now - self._last_part >= self.PART_INTERVAL:
            self._last_part = now
            self._handle.update(self._text_output(), raw=True)

    def _text_output(self):
        return {"text/plain": self.line()}

    def update(self, n: int = 1) -> None:
        self.done += n
        self._part = ""  # a run ended: its part with it
        if not self.enabled:
            return
        outer = Progress._live[-1] if Progress._live and self not in Progress._live else None
        if outer is not None:
            outer._show_part(self)
            if outer._handle is not None and not self._terminal:
                return  # the notebook's line says it; no extra lines in the cell
        self._emit(force=self.done >= self.total and self._emitted)

    def _emit(self, force: bool, to_notebook: bool = True) -> None:
        now = time.perf_counter()
        if not force and now - self._last < self.min_interval:
            return
        self._last, self._emitted = now, True
        if self._handle is not None and to_notebook:
            self._handle.update(self._text_output(), raw=True)
        if self._terminal:
            try:
                with open(self._terminal, "a", encoding="utf-8") as sink:
                    sink.write(self.line() + "\n")
            except OSError:  # the terminal went away: keep computing
                self._terminal = None
        elif self._handle is None:
            stream = sys.stdout if os.environ.get(STREAM_ENV) == "stdout" else sys.stderr
            print(self.line(), file=stream, flush=True)

    def close(self) -> None:
        if self.enabled and self._emitted and self.done < self.total:
            self._emit(force=True)
        self.enabled = False
        if self in Progress._live:
            Progress._live.remove(self)


@contextmanager
def waiting(what: str, interval: float = 1.0) -> Iterator[None]:
    """A blocking call that may take seconds, shown from its first second in a notebook: ``what`` (e.g. ``"smollm2:
    live call 3 (its reply is not in the transcript; ...)"``) and the seconds so far. The open live bar's line says
    it; without one, one line of the cell's own (the calls of one cell share it), left at ``what: took Ns``. Outside a
    notebook: nothing."""
    if not in_notebook():
        yield
        return
    from IPython import get_ipython
    from IPython.display import display

    outer = Progress._live[-1] if Progress._live and Progress._live[-1]._handle is not None else None
    start, stop = time.perf_counter(), threading.Event()
    own = None
    if outer is None:
        cell, last = get_ipython().execution_count, Progress._waiting_line
        own = last[1] if last is not None and last[0] == cell else display({"text/plain": ""}, raw=True,
                                                                             display_id=True)
        Progress._waiting_line = (cell, own)

    def show(text: str) -> None:
        if own is not None:
            own.update({"text/plain": text}, raw=True)
        else:
            outer._part = text
            outer._handle.update(outer._text_output(), raw=True)

    show(f"{what}: 0s so far")

    def tick() -> None:
        while not stop.wait(interval):
            show(f"{what}: {duration(time.perf_counter() - start)} so far")

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()
        if own is not None:
            own.update({"text/plain": f"{what}: took {duration(time.perf_counter() - start)}"}, raw=True)
