"""Saving a notebook in JupyterLab never shows in ``git status``, however JupyterLab was started.

A real JupyterLab serves a scratch repository laid out as this one (``.gitattributes`` and its nbstripout filter, a
committed workshop notebook, the git-ignored ``workshop/`` copies). A notebook with outputs is saved through the
server's contents API, as JupyterLab's Save does, then ``git status --porcelain`` must be empty. The server starts
the three documented ways: as ``make lab`` (``jupyter lab notebooks``), as ``make workshop`` (on the participants'
copies) and as ``jupyter lab`` at the repository's root; with the environment's Jupyter configuration as ``make
setup`` writes it (``marlinkit.notebook_save.install``). Without it the same save leaves `` M`` behind: the check
sees the problem it guards against.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from marlinkit import notebook_save, paths

NOTEBOOK = "01_corridor_env.ipynb"
TOKEN = "notebook-save-test"
#: Each JupyterLab start takes 5-20 s: `make test-all` (CI) runs these, `make test` the strip check only.
SERVER = pytest.mark.slow


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path) -> Path:
    """A git repository with this one's filter settings, one committed workshop notebook and a participant's copy."""
    repo = tmp_path / "repo"
    (repo / "notebooks" / "workshop").mkdir(parents=True)
    shutil.copy(paths.REPO_ROOT / ".gitattributes", repo / ".gitattributes")
    (repo / ".gitignore").write_text("/workshop/\n.ipynb_checkpoints/\n")
    shutil.copy(paths.NOTEBOOKS_DIR / "workshop" / NOTEBOOK, repo / "notebooks" / "workshop" / NOTEBOOK)
    _git(repo, "init", "-q")
    for key, value in (("filter.nbstripout.clean", f"{sys.executable} -m nbstripout"),
                       ("filter.nbstripout.smudge", "cat"), ("user.name", "test"),
                       ("user.email", "test@example.invalid")):
        _git(repo, "config", key, value)
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "notebooks")
    (repo / "workshop").mkdir()
    shutil.copy(repo / "notebooks" / "workshop" / NOTEBOOK, repo / "workshop" / NOTEBOOK)
    assert _git(repo, "status", "--porcelain") == ""
    return repo


def _with_outputs(model: dict) -> dict:
    """The notebook as JupyterLab sends it after Run All: outputs, counts, timing metadata, a new kernel version."""
    notebook = model["content"]
    count = 0
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            count += 1
            cell["execution_count"] = count
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": f"output {count}\n"},
                               {"output_type": "execute_result", "execution_count": count, "metadata": {},
                                "data": {"text/plain": "42"}}]
            cell["metadata"]["execution"] = {"iopub.status.busy": "2026-01-01T00:00:00.000Z"}
    return {"type": "notebook", "format": "json", "content": notebook}


def _save_with_outputs(repo: Path, config: Path | None, root: str, api_path: str) -> None:
    """Start JupyterLab in ``repo`` on folder ``root``, save ``api_path`` with outputs through it, stop it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    home = repo.parent / f"jupyter-{port}"
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "JUPYTER_DATA_DIR": str(home / "data"), "JUPYTER_PLATFORM_DIRS": "1",
           "PYTHONPATH": os.pathsep.join([str(paths.REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("JUPYTER_CONFIG_PATH", None)
    if config is not None:
        env["JUPYTER_CONFIG_PATH"] = str(config)
    else:  # not even this environment's configuration, where `make setup` may have enabled the hook
        env["JUPYTER_NO_CONFIG"] = "1"
    args = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
            f"--IdentityProvider.token={TOKEN}", *(["--allow-root"] if os.geteuid() == 0 else []),
            *([root] if root else [])]
    log_path = home / "jupyterlab.log"
    home.mkdir(parents=True)
    with log_path.open("w") as log:
        server = subprocess.Popen(args, cwd=repo, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}/api/contents/{api_path}"
            headers = {"Authorization": f"token {TOKEN}", "Content-Type": "application/json"}
            deadline = time.monotonic() + 90
            while True:
                try:
                    with urllib.request.urlopen(urllib.request.Request(url + "?content=1", headers=headers)) as answer:
                        model = json.load(answer)
                    break
                except OSError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        pytest.fail(f"JupyterLab did not answer: {log_path.read_text()[-3000:]}")
                    time.sleep(0.5)
            body = json.dumps(_with_outputs(model)).encode()
            request = urllib.request.Request(url, data=body, headers=headers, method="PUT")
            with urllib.request.urlopen(request) as answer:
                assert answer.status == 200
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()


def _config(tmp_path: Path) -> Path:
    """The Jupyter configuration folder of an environment at a scratch prefix, as ``make setup`` writes it (the
    Makefile runs ``python -m marlinkit notebook-save`` with the environment's Python)."""
    prefix = tmp_path / "prefix"
    subprocess.run([sys.executable, "-c", "import runpy, sys; sys.prefix = sys.argv[1]; "
                    "sys.argv[1:] = ['notebook-save']; runpy.run_module('marlinkit', run_name='__main__')",
                    str(prefix)],
                   check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(paths.REPO_ROOT)})
    written = prefix / "etc" / "jupyter" / "jupyter_server_config.d" / "marlinkit.json"
    assert json.loads(written.read_text()) == {"ServerApp": {"jpserver_extensions": {"marlinkit.notebook_save": True}}}
    return written.parent.parent


def test_the_hook_strips_exactly_as_the_git_filter_does(tmp_path):
    source = paths.NOTEBOOKS_DIR / "workshop" / NOTEBOOK
    executed = _with_outputs({"content": json.loads(source.read_text())})["content"]
    executed["metadata"]["widgets"] = {"state": {}}
    (tmp_path / "executed.ipynb").write_text(json.dumps(executed))
    by_filter = subprocess.run([sys.executable, "-m", "nbstripout"], stdin=(tmp_path / "executed.ipynb").open(),
                               capture_output=True, text=True, check=True).stdout
    assert nbformat.writes(notebook_save.strip(executed)) + "\n" == by_filter == source.read_text()


@SERVER
@pytest.mark.parametrize("started_as, root, api_path", [
    ("make lab", "notebooks", f"workshop/{NOTEBOOK}"),
    ("jupyter lab at the repository's root", "", f"notebooks/workshop/{NOTEBOOK}"),
])
def test_saving_a_tracked_notebook_leaves_git_clean(repo, tmp_path, started_as, root, api_path):
    _save_with_outputs(repo, _config(tmp_path), root, api_path)
    assert _git(repo, "status", "--porcelain") == "", f"saving in JupyterLab started as {started_as} dirtied git"
    saved = (repo / "notebooks" / "workshop" / NOTEBOOK).read_bytes()
    assert saved == (paths.NOTEBOOKS_DIR / "workshop" / NOTEBOOK).read_bytes()


@SERVER
def test_a_participants_copy_keeps_its_outputs_and_git_stays_clean(repo, tmp_path):
    _save_with_outputs(repo, _config(tmp_path), "workshop", NOTEBOOK)  # as `make workshop` starts it
    assert _git(repo, "status", "--porcelain") == ""
    saved = nbformat.read(repo / "workshop" / NOTEBOOK, as_version=4)
    assert any(cell.get("outputs") for cell in saved.cells), "a participant's copy lost its outputs"


@SERVER
def test_without_the_environments_configuration_the_same_save_dirties_git(repo):
    _save_with_outputs(repo, None, "notebooks", f"workshop/{NOTEBOOK}")
    assert _git(repo, "status", "--porcelain").strip() == f"M notebooks/workshop/{NOTEBOOK}"
    assert _git(repo, "diff") == ""  # the filter's form is unchanged: only the file's size tells git it changed
