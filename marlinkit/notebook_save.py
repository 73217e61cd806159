"""JupyterLab saves a notebook that git tracks in the form git stores it, so a save never shows in ``git status``.

The repository commits notebooks without outputs: ``.gitattributes`` runs every ``*.ipynb`` through the nbstripout
filter. A notebook saved with outputs still differs from the index in size, and git reports a file whose size changed
as modified without running the filter (`` M`` with an empty diff), which blocks ``git pull`` and merges. So
:func:`pre_save_hook`, a Jupyter server pre-save hook, strips a notebook exactly as that filter does (the same
function, keys and serialisation: the saved file is byte for byte what git stores) when git tracks it and applies the
nbstripout filter to it. Notebooks git does not track, such as the participants' copies that ``make workshop`` makes
in the git-ignored ``workshop/``, keep their outputs.

The module is a Jupyter server extension that registers the hook. ``make setup`` enables it in the environment's
Jupyter configuration (:data:`SERVER_CONFIG`, written to ``.venv/etc/jupyter/jupyter_server_config.d/marlinkit.json``),
so it runs however JupyterLab starts from that environment: ``make lab``, ``make workshop`` or ``.venv/bin/jupyter
lab``. A hook that fails is logged by the server and the notebook is saved as it is.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

#: The Jupyter server configuration that enables this extension (``jupyter_server_config.d/marlinkit.json``).
EXTENSION = "marlinkit.notebook_save"  # this module's name
SERVER_CONFIG = {"ServerApp": {"jpserver_extensions": {EXTENSION: True}}}
#: The metadata keys the nbstripout command strips by default (its ``extra_keys``), as the git filter runs it.
NBSTRIPOUT_EXTRA_KEYS = ("metadata.signature", "metadata.widgets", "cell.metadata.collapsed",
                         "cell.metadata.ExecuteTime", "cell.metadata.execution", "cell.metadata.heading_collapsed",
                         "cell.metadata.hidden", "cell.metadata.scrolled")
FILTER = "nbstripout"


def _git(folder: Path, *args: str) -> str | None:
    """Standard output of ``git args`` run in ``folder``; None where git fails or is missing."""
    try:
        done = subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def stored_stripped(path: str | Path) -> bool:
    """True when git tracks ``path`` and stores it through the nbstripout filter (``.gitattributes``)."""
    path = Path(path).resolve()
    if _git(path.parent, "ls-files", "--error-unmatch", "--", path.name) is None:
        return False
    attribute = _git(path.parent, "check-attr", "filter", "--", path.name) or ""
    return attribute.strip().endswith(f": {FILTER}")


def extra_keys(folder: Path) -> list[str]:
    """The filter's keys: nbstripout's defaults and the repository's ``filter.nbstripout.extrakeys``."""
    configured = (_git(folder, "config", "filter.nbstripout.extrakeys") or "").split()
    return [*NBSTRIPOUT_EXTRA_KEYS, *configured]


def strip(notebook: dict, folder: Path | None = None):
    """``notebook`` (a notebook's JSON as a dict) as the nbstripout filter leaves it: no outputs, no execution counts,
    numbered cell ids, its default metadata keys removed. Returns an ``nbformat.NotebookNode``."""
    import nbformat
    from nbstripout import strip_output

    node = nbformat.from_dict(notebook)
    keys = extra_keys(folder) if folder is not None else list(NBSTRIPOUT_EXTRA_KEYS)
    return strip_output(node, keep_output=False, keep_count=False, keep_id=False, extra_keys=keys)


def pre_save_hook(model: dict, path: str, contents_manager, **kwargs) -> None:
    """Jupyter's pre-save hook: a notebook git stores stripped is saved stripped (see the module's docstring)."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    os_path = Path(contents_manager.root_dir, path.strip("/"))
    if not stored_stripped(os_path):
        return
    model["content"] = strip(model["content"], os_path.parent)


def _jupyter_server_extension_points() -> list[dict]:
    return [{"module": EXTENSION}]


def _load_jupyter_server_extension(serverapp) -> None:
    serverapp.contents_manager.register_pre_save_hook(pre_save_hook)


def install(prefix: str | Path | None = None) -> Path:
    """Enable the extension in the Jupyter configuration of the environment at ``prefix`` (default: this Python's)."""
    import json
    import sys

    target = Path(prefix or sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.d" / "marlinkit.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(SERVER_CONFIG, indent=2) + "\n", encoding="utf-8")
    return target
