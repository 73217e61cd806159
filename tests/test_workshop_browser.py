"""The workshop as a participant meets it: JupyterLab in headless Chromium, each notebook run, saved and closed.

One JupyterLab serves the participants' copies (``make workshop``'s ``workshop.copy_notebooks``) in a fresh folder;
Selenium drives Debian's Chromium through its chromedriver. Per notebook: open it from the file browser, Run All from
the Run menu, wait, check that no cell shows an error and at least one figure is drawn inline, save (Ctrl+S), then apply
each exercise's suggested change in the cell the notebook holds for it, run it again and check it too; close. After
all four, ``git status`` is what it was before: nothing a workshop run writes is tracked or left unignored.

Runs where ``/usr/bin/chromium`` and ``/usr/bin/chromedriver`` exist (``.ci/run`` installs both), or with
``MARLINKIT_BROWSER_TEST=1``; ``MARLINKIT_BROWSER_TEST=0`` skips it. Results go to a fresh folder
(``$MARLINKIT_RESULTS``), so every training runs as in a participant's first session.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from marlinkit import paths

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
SWITCH = os.environ.get("MARLINKIT_BROWSER_TEST", "")
# JupyterLab in a browser through all four notebooks takes minutes: `make test-all` (CI) runs it, `make test` does not.
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(SWITCH == "0" or (SWITCH != "1" and not (CHROMIUM.exists() and CHROMEDRIVER.exists())),
                                 reason="needs Chromium and chromedriver (apt-get install chromium chromium-driver), "
                                        "or MARLINKIT_BROWSER_TEST=1")]
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1400,1000"]
#: Longest wait for one Run All (the slowest notebook at the workshop preset: about 2 minutes on 2 idle cores).
RUN_LIMIT_S = 480

# The exercises' suggested changes: (what the exercise says, cell to find by its text, old text, new text, then
# "cell" to run that cell or "all" to run all cells again) and what the changed run must print.
EXERCISES = {
    "01_corridor_env.ipynb": [
        ("a corridor with no place to step aside", "MY_MAP = '''", "#B#\n#.#\n...\n#.#\n#.#\n#A#",
         "#B#\n#.#\n#.#\n#.#\n#.#\n#A#", "cell", "planner: performance"),
    ],
    "02_mappo_from_scratch.ipynb": [
        ("one hyperparameter", "CHANGES = {", 'CHANGES = {"lr": 3e-4}', 'CHANGES = {"lr": 3e-4, "clip_coef": 0.3}',
         "cell", "mean performance"),
    ],
    "03_llm_negotiation.ipynb": [
        ("a reply the parser rejects", 'parse_reply("Alice: north, Bob: stay")',
         'parse_reply("Alice: north, Bob: stay")', 'parse_reply("Alice goes north while Bob stays put")', "cell",
         "malformed"),
        ("the protocol without its worked example", "CHANGES = {", "CHANGES = {}",
         'CHANGES = {"worked_example": False}', "cell", "changed {'worked_example': False}"),
    ],
    "04_marlin_in_15_minutes.ipynb": [
        ("a larger plan budget, smollm2 replayed", 'PRESET = "workshop"', "PLAN_BUDGET = None", "PLAN_BUDGET = 8",
         "all", "0 calls to the model"),
        ("the scripted LLM", 'PRESET = "workshop"', 'LLM = None', 'LLM = "scripted"', "all",
         "replies computed by the script"),
    ],
}

# JavaScript run in the page (JupyterLab exposes its application as window.jupyterapp with expose_app_in_browser);
# a cell is found by its text, among code cells only (an exercise's markdown quotes the change it asks for).
CURRENT = "const w = window.jupyterapp.shell.currentWidget;"
JS_READY = CURRENT + """
return !!(w && w.context && w.context.path === arguments[0] && w.context.isReady && w.sessionContext.session
          && w.sessionContext.session.kernel && w.sessionContext.session.kernel.status === 'idle');"""
JS_STATE = CURRENT + """
const cells = w.content.widgets.filter(c => c.model.type === 'code');
const outputs = cells.map(c => c.model.outputs.toJSON());
return {status: w.sessionContext.session.kernel.status,
        pending: cells.filter(c => c.promptNode && c.promptNode.textContent.includes('*')).length,
        unexecuted: cells.filter(c => c.model.executionCount === null).length,
        errors: outputs.flat().filter(o => o.output_type === 'error')
            .map(o => o.ename + ': ' + o.evalue + ' | ' + (o.traceback || []).join(' ')),
        stderr: outputs.flat().filter(o => o.output_type === 'stream' && o.name === 'stderr').map(o => o.text),
        lines: cells.map(c => c.model.outputs.toJSON().filter(o => o.output_type === 'display_data' && o.data
            && o.data['text/plain'] && !Object.keys(o.data).some(k => k.startsWith('image/'))).length),
        images: outputs.flat().filter(o => o.data && o.data['image/png']).length,
        drawn: w.node.querySelectorAll('.jp-OutputArea-output img').length,
        text: outputs.flat().map(o => (o.text || '') + ((o.data || {})['text/plain'] || '')).join('\\n'),
        dirty: w.context.model.dirty};"""
JS_SET_SOURCE = CURRENT + """
const cell = w.content.widgets.find(c => c.model.type === 'code'
                                         && c.model.sharedModel.getSource().includes(arguments[0]));
if (!cell) return 'no cell holds ' + arguments[0];
const source = cell.model.sharedModel.getSource();
if (!source.includes(arguments[1])) return 'the cell does not hold ' + arguments[1];
cell.model.sharedModel.setSource(source.replace(arguments[1], arguments[2]));
w.content.activeCellIndex = w.content.widgets.indexOf(cell);
w.content.deselectAll();
return '';"""
JS_CLOSE = CURRENT + """
const done = arguments[arguments.length - 1];
w.sessionContext.shutdown().then(() => { w.close(); done(''); }, e => done(String(e)));"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _git_status() -> list[str]:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=paths.REPO_ROOT, check=True,
                          capture_output=True, text=True).stdout.splitlines()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab on fresh copies of the workshop notebooks, and a Chromium page on it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from marlinkit.marlin import workshop

    base = tmp_path_factory.mktemp("workshop-lab")
    copies, home = base / "workshop", base / "jupyter"
    workshop.copy_notebooks(copies)
    settings = home / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false",
                                                                           "checkForUpdates": False}))
    port, token = _free_port(), "workshop-browser-test"
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "JUPYTER_DATA_DIR": str(home / "data"), paths.RESULTS_ENV: str(base / "results"), "SE_AVOID_STATS": "true"}
    env.pop("MARLINKIT_LLM", None)
    log = (base / "jupyterlab.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={copies}", "--LabApp.expose_app_in_browser=True",
         f"--LabApp.user_settings_dir={home / 'settings'}", f"--LabApp.workspaces_dir={home / 'workspaces'}",
         *(["--allow-root"] if os.geteuid() == 0 else [])],
        cwd=copies, env=env, stdout=log, stderr=subprocess.STDOUT)
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={base / 'chromium'}"]:
        options.add_argument(flag)
    driver = None
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail(f"JupyterLab did not start: {(base / 'jupyterlab.log').read_text()[-3000:]}")
                time.sleep(0.5)
        driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
        driver.set_script_timeout(120)
        driver.get(f"http://127.0.0.1:{port}/lab?token={token}&reset")
        _wait(lambda: driver.execute_script("return !!(window.jupyterapp && window.jupyterapp.shell && "
                                            "document.querySelector('.jp-DirListing-item'));"),
              120, "JupyterLab's file browser")
        yield driver, copies
    finally:
        if driver is not None:
            driver.quit()
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


@pytest.fixture(scope="module")
def status_before():
    return _git_status()


def _wait(condition, limit_s: float, what: str, poll_s: float = 1.0):
    deadline = time.monotonic() + limit_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"waited {limit_s:.0f} s for {what}")
        time.sleep(poll_s)


def _finished(driver) -> dict | None:
    """The notebook's state once nothing runs any more (twice idle in a row, nothing pending), else None."""
    first = driver.execute_script(JS_STATE)
    if first["status"] != "idle" or first["pending"]:
        return None
    time.sleep(1.0)
    second = driver.execute_script(JS_STATE)
    return second if second["status"] == "idle" and not second["pending"] else None


def _click_menu(driver, menu: str, command: str) -> None:
    from selenium.webdriver.common.by import By

    item = next(e for e in driver.find_elements(By.CSS_SELECTOR, "#jp-MainMenu .lm-MenuBar-item")
                if e.text.strip() == menu)
    item.click()
    entry = _wait(lambda: driver.find_elements(By.CSS_SELECTOR, f'.lm-Menu-item[data-command="{command}"]'), 10,
                  f"the {menu} menu's {command}", 0.2)
    entry[0].click()


def _run_all(driver, name: str) -> dict:
    _click_menu(driver, "Run", "runmenu:run-all")
    _wait(lambda: driver.execute_script(JS_STATE)["pending"] or driver.execute_script(JS_STATE)["status"] != "idle", 30,
          f"{name} to start running", 0.2)
    return _wait(lambda: _finished(driver), RUN_LIMIT_S, f"{name}: Run All")


def _run_cell(driver, name: str) -> dict:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver.find_element(By.CSS_SELECTOR, ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").send_keys(Keys.ESCAPE)
    driver.execute_script("return window.jupyterapp.commands.execute('notebook:run-cell');")
    time.sleep(1.0)
    return _wait(lambda: _finished(driver), RUN_LIMIT_S, f"{name}: the exercise's cell")


def _save(driver, name: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    ActionChains(driver).key_down(Keys.CONTROL).send_keys("s").key_up(Keys.CONTROL).perform()
    _wait(lambda: not driver.execute_script(JS_STATE)["dirty"], 30, f"{name} to be saved", 0.3)


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_a_participant_runs_saves_and_does_the_exercises_of(name, status_before, lab):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    driver, copies = lab
    started = time.monotonic()
    driver.execute_script("return window.jupyterapp.commands.execute('filebrowser:activate');")  # the left sidebar
    entry = _wait(lambda: [e for e in driver.find_elements(By.CSS_SELECTOR, ".jp-DirListing-item")
                           if name in (e.get_attribute("title") or "") and e.is_displayed()],
                  30, f"{name} in the file browser")
    ActionChains(driver).double_click(entry[0]).perform()  # opens it, as a participant does
    try:
        _wait(lambda: driver.execute_script(JS_READY, name), 120, f"{name} to open with an idle kernel")
    finally:
        driver.save_screenshot(str(copies.parent / f"{name}.opened.png"))

    state = _run_all(driver, name)
    assert not state["errors"], f"{name}: {state['errors']}"
    assert not state["stderr"], f"{name}: warning text in the notebook: {state['stderr']}"
    assert max(state["lines"]) <= 1, f"{name}: a cell left {max(state['lines'])} progress lines"
    assert state["unexecuted"] == 0, f"{name}: {state['unexecuted']} cells did not run"
    assert state["images"] >= 1 and state["drawn"] >= 1, \
        f"{name}: no inline figure ({state['images']} images, {state['drawn']} drawn)"
    _save(driver, name)
    saved = json.loads((copies / name).read_text())
    assert any(o.get("data", {}).get("image/png") for c in saved["cells"]
               for o in c.get("outputs", [])), "saved without outputs"

    for what, anchor, old, new, run, expect in EXERCISES[name]:
        problem = driver.execute_script(JS_SET_SOURCE, anchor, old, new)
        assert not problem, f"{name}, exercise {what!r}: {problem}"
        if run is None:
            continue
        state = _run_all(driver, name) if run == "all" else _run_cell(driver, name)
        assert not state["errors"], f"{name}, exercise {what!r}: {state['errors']}"
        assert not state["stderr"], f"{name}, exercise {what!r}: warning text in the notebook: {state['stderr']}"
        assert expect in state["text"], f"{name}, exercise {what!r}: {expect!r} not in the outputs"
    _save(driver, name)
    assert driver.execute_async_script(JS_CLOSE) == ""
    print(f"{name}: run, saved, exercises and closed in {time.monotonic() - started:.0f} s")


def test_after_the_workshop_git_status_is_unchanged(status_before, lab):
    """Runs after the notebooks (pytest keeps file order): nothing the session wrote shows in git status.

    Every path a workshop run writes names the workshop (results, transcripts, figures, copies); only those are
    compared, so that other work in the same checkout does not count."""
    new = sorted(line for line in set(_git_status()) - set(status_before) if "workshop" in line)
    assert new == [], "a workshop run changed or left files git does not ignore"
    copies = subprocess.run(["git", "check-ignore", "-q", "workshop/01_corridor_env.ipynb"], cwd=paths.REPO_ROOT)
    assert copies.returncode == 0, "make workshop's folder must be git-ignored"
