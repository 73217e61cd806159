"""`make data` / ``python -m marlinkit data fetch|check``: the Hangzhou files, pinned and SHA-256 checked.

The origin path runs against a local HTTP server on 127.0.0.1 serving the files under their origin
paths (owner/repo/commit/path, as raw.githubusercontent.com does); mirrors are ``file://`` folders.
The bytes come from the workplace's data folder (found as the tests of the traffic env find it).
"""

import functools
import http.server
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from marlinkit.envs.traffic import fetch
from marlinkit.envs.traffic.data import DataError, find_data_dir

try:
    SOURCE = find_data_dir()
except DataError:
    pytest.skip("Hangzhou data not found (make data)", allow_module_level=True)


def _layout(root: Path, name_of) -> Path:
    for item in fetch.FILES:
        target = root / name_of(item)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SOURCE / item.name, target)
    return root


@pytest.fixture
def mirror(tmp_path):
    """A file:// mirror with the data folder's flat layout."""
    return _layout(tmp_path / "mirror", lambda item: item.name)


@pytest.fixture
def origin_server(tmp_path):
    """http://127.0.0.1:<port> serving the files under their origin paths."""
    root = _layout(tmp_path / "origin", lambda item: item.origin)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", root
    server.shutdown()
    server.server_close()


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*") if p.name.endswith(".partial")]


def test_pins_are_the_shared_copy_s_bytes():
    assert fetch.check(SOURCE) == {item.name: "ok" for item in fetch.FILES}
    assert all(item.origin.split("/")[2] in ("04440b722e7f36d7043a3f2ad8e40c3df301fad3",
                                             "127af9f93902778e556de2eedb2b606c4c9447e6") for item in fetch.FILES)


def test_downloads_from_the_origin_paths_and_checks_every_file(origin_server, tmp_path):
    base, _ = origin_server
    target = tmp_path / "data"
    assert set(fetch.fetch(target, origin_base=base).values()) == {"fetched"}
    assert fetch.check(target) == {item.name: "ok" for item in fetch.FILES}
    assert fetch.fetch(target, origin_base=base) == {item.name: "ok" for item in fetch.FILES}  # kept, not fetched again
    assert not _leftovers(target)


def test_a_corrupted_mirror_file_is_refused_by_its_hash(mirror, tmp_path):
    bad = mirror / "sumo/hangzhou_4x4_gudang_18041610_1h.net.xml"
    data = bytearray(bad.read_bytes())
    data[1000] ^= 1
    bad.write_bytes(bytes(data))
    target = tmp_path / "data"
    with pytest.raises(DataError, match="wrong SHA-256") as error:
        fetch.fetch(target, mirror=mirror.as_uri())
    assert "sumo/hangzhou_4x4_gudang_18041610_1h.net.xml" in str(error.value)
    assert not (target / "sumo/hangzhou_4x4_gudang_18041610_1h.net.xml").exists()  # never in place
    assert not _leftovers(target)
    assert fetch.check(target)["roadnet_4_4.json"] == "ok"  # the good ones before it stay


def test_a_missing_file_and_no_network_each_say_what_to_do(mirror, tmp_path, origin_server):
    (mirror / "anon_4_4_hangzhou_real_5734.json").unlink()
    with pytest.raises(DataError, match="missing at its source.*MARLINKIT_DATA_MIRROR"):
        fetch.fetch(tmp_path / "a", mirror=str(mirror))
    base, root = origin_server
    (root / fetch.FILES[0].origin).unlink()
    with pytest.raises(DataError, match="404"):
        fetch.fetch(tmp_path / "b", origin_base=base)
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    with pytest.raises(DataError, match="cannot reach .*no network.*MARLINKIT_DATA_MIRROR"):
        fetch.fetch(tmp_path / "c", mirror=f"http://127.0.0.1:{closed}/data")
    assert not _leftovers(tmp_path)


def test_cli_check_reports_and_marlinkit_data_is_only_checked(mirror, tmp_path):
    def cli(action, **env):
        import json
        import os

        out = subprocess.run([sys.executable, "-m", "marlinkit", "data", action, "--json"], capture_output=True,
                             text=True, env={**os.environ, **env}, timeout=120)
        return out.returncode, json.loads(out.stdout.strip().splitlines()[-1])

    code, result = cli("check", MARLINKIT_DATA=str(mirror))
    assert code == 0 and set(result["files"].values()) == {"ok"}
    (mirror / "roadnet_4_4.json").write_text("{}")
    code, result = cli("fetch", MARLINKIT_DATA=str(mirror))
    assert code == 1 and result["files"]["roadnet_4_4.json"] == "wrong hash" and "roadnet_4_4.json" in result["error"]
    assert (mirror / "roadnet_4_4.json").read_text() == "{}"  # MARLINKIT_DATA is never written
