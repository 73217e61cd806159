"""The Hangzhou 4x4 data: ``python -m marlinkit data fetch|check`` (``make data`` runs ``fetch``).

The files carry no license (neither source repository has one), so they are never committed: they
are downloaded from their public origins, each pinned by commit and checked by SHA-256, into
``data/hangzhou_4x4/`` (ignored by git), with the same relative names as ``../shared/data/hangzhou_4x4``.

Sources, first match wins:

* ``MARLINKIT_DATA``: an existing folder holding the files; it is only checked, nothing is written.
* ``MARLINKIT_DATA_MIRROR``: a base URL, or a ``file://`` folder, holding the files under their
  relative names (the flat layout of the data folder: ``roadnet_4_4.json``, ``sumo/...net.xml``).
* else the origins: ``raw.githubusercontent.com`` at the commits below (CoLight for the CityFlow
  roadnet and flows, LibSignal for the SUMO network and its route file).

A file already in place with the right hash is kept. Every download goes to a temporary name
beside its target, is hashed, and is renamed into place only when the hash matches, so nothing
half-downloaded or wrong is ever left under a file's real name.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from marlinkit import paths
from marlinkit.envs.traffic.data import DATASET, ENV_VAR, DataError

MIRROR_VAR = "MARLINKIT_DATA_MIRROR"
ORIGIN_BASE = "https://raw.githubusercontent.com"
COLIGHT = "wingsweihua/colight/04440b722e7f36d7043a3f2ad8e40c3df301fad3/data/Hangzhou/4_4"
LIBSIGNAL = ("DaRL-LibSignal/LibSignal/127af9f93902778e556de2eedb2b606c4c9447e6/data/raw_data/"
             "hangzhou_4x4_gudang_18041610_1h")
TIMEOUT_S = 60


@dataclass(frozen=True)
class DataFile:
    """One file of the data set."""

    name: str  #: path relative to the data folder (and to a mirror)
    origin: str  #: path under ORIGIN_BASE: owner/repo/commit/path in the repository
    sha256: str  #: hash of the exact bytes the project was built and tested with
    size: int  #: bytes


FILES = (
    DataFile("roadnet_4_4.json", f"{COLIGHT}/roadnet_4_4.json",
             "11e2fe89f632e43e81f56ea87a308d544b66f9c5af8a410e16149668d6d376c1", 847012),
    DataFile("anon_4_4_hangzhou_real.json", f"{COLIGHT}/anon_4_4_hangzhou_real.json",
             "595a6140e6649efe5be1b274eb8b03e8c4029e517c9ac2ad53c9ea556a414213", 899200),
    DataFile("anon_4_4_hangzhou_real_5816.json", f"{COLIGHT}/anon_4_4_hangzhou_real_5816.json",
             "e9b9e31e9a9a5f59d1a668b242319c3ef69f1ab724e2f2b618ed4886cc1a7a9c", 2101857),
    DataFile("anon_4_4_hangzhou_real_5734.json", f"{COLIGHT}/anon_4_4_hangzhou_real_5734.json",
             "db0a055ebcefb4c31daa7ac3b37880690df50551f0d6dd04904b6448ff710995", 1972927),
    DataFile("sumo/hangzhou_4x4_gudang_18041610_1h.net.xml", f"{LIBSIGNAL}/hangzhou_4x4_gudang_18041610_1h.net.xml",
             "5a74ada65f5148d23347be3f1f3babdb0b90df2418cd1382e6023469aee25499", 426730),
    DataFile("sumo/hangzhou_4x4_gudang_18041610_1h.rou.xml", f"{LIBSIGNAL}/hangzhou_4x4_gudang_18041610_1h.rou.xml",
             "a35ee97a397b2f44e14f36750a7dd84816bcc8d5b82517a3ac7e3375fb3e972d", 356636),
)
DEFAULT_DIR = paths.DATA_DIR / DATASET
_WHAT_TO_DO = (f"To fetch from elsewhere, set {MIRROR_VAR} to a base URL or file:// folder holding the files under "
               f"their relative names, or set {ENV_VAR} to a folder that already holds them; to fetch by hand, "
               f"download each file from {ORIGIN_BASE}/<origin path> (listed by `python -m marlinkit data check`) "
               f"into {DEFAULT_DIR}.")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _state(folder: Path, item: DataFile) -> str:
    path = folder / item.name
    if not path.is_file():
        return "missing"
    return "ok" if sha256(path) == item.sha256 else "wrong hash"


def check(folder: Path) -> dict[str, str]:
    """Each file's state in ``folder``: ``ok``, ``missing`` or ``wrong hash``."""
    return {item.name: _state(Path(folder), item) for item in FILES}


def source_url(item: DataFile, mirror: str | None = None, origin_base: str = ORIGIN_BASE) -> str:
    """Where ``item`` is downloaded from: the mirror (a URL, ``file://`` folder or plain folder) or its origin."""
    if not mirror:
        return f"{origin_base.rstrip('/')}/{item.origin}"
    if "://" not in mirror:
        mirror = Path(mirror).resolve().as_uri()
    return f"{mirror.rstrip('/')}/{item.name}"


def _download(item: DataFile, url: str, target: Path) -> None:
    """``url`` to a temporary name beside ``target``, hashed, then renamed onto it (or removed)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    try:
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response, open(partial, "wb") as out:
                for block in iter(lambda: response.read(1 << 20), b""):
                    digest.update(block)
                    out.write(block)
        except urllib.error.HTTPError as error:
            if error.code == 404:
                raise DataError(f"{item.name} is missing at its source: {url} answered 404 Not Found. The source "
                                f"does not hold this file under this name (a mirror needs the flat layout of "
                                f"{DEFAULT_DIR}, e.g. <mirror>/{item.name}). {_WHAT_TO_DO}") from error
            raise DataError(f"downloading {item.name} from {url} failed: HTTP {error.code} {error.reason}. "
                            f"Try again later. {_WHAT_TO_DO}") from error
        except urllib.error.URLError as error:
            if isinstance(error.reason, (FileNotFoundError, NotADirectoryError)) or url.startswith("file:"):
                raise DataError(f"{item.name} is missing at its source: {url} does not exist ({error.reason}). A "
                                f"mirror folder needs the flat layout of {DEFAULT_DIR}, e.g. <mirror>/{item.name}. "
                                f"{_WHAT_TO_DO}") from error
            raise DataError(f"cannot reach {url} to download {item.name} ({error.reason}): no network, or the host "
                            f"is blocked here. {_WHAT_TO_DO}") from error
        except (OSError, TimeoutError) as error:
            raise DataError(f"downloading {item.name} from {url} failed ({error!r}): the network dropped or timed "
                            f"out. Run it again; files already checked are kept. {_WHAT_TO_DO}") from error
        got = digest.hexdigest()
        if got != item.sha256:
            raise DataError(f"{item.name} from {url} has the wrong SHA-256 ({got[:16]}..., expected "
                            f"{item.sha256[:16]}..., {partial.stat().st_size} bytes, expected {item.size}): the "
                            f"source holds a different or corrupted file, and it was not installed. Replace it at "
                            f"the source with the file at the pinned commit ({ORIGIN_BASE}/{item.origin}), or "
                            f"unset {MIRROR_VAR} to fetch from the origin.")
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def fetch(folder: Path | None = None, mirror: str | None = None, origin_base: str = ORIGIN_BASE) -> dict[str, str]:
    """Download every file not already in ``folder`` with the right hash; each file's state after.

    Raises :class:`DataError` on the first file that cannot be fetched (files done so far stay)."""
    folder = Path(folder) if folder is not None else DEFAULT_DIR
    states = {}
    for item in FILES:
        if _state(folder, item) == "ok":
            states[item.name] = "ok"
            continue
        _download(item, source_url(item, mirror, origin_base), folder / item.name)
        states[item.name] = "fetched"
    return states


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("fetch", "check"),
                        help="fetch: download what is missing or wrong (checked by SHA-256); check: only report")


def command(args: argparse.Namespace) -> dict:
    """``fetch`` or ``check`` the data folder: MARLINKIT_DATA when set (checked only), else data/hangzhou_4x4."""
    given = os.environ.get(ENV_VAR)
    if given:
        folder = Path(given)
        if not folder.is_dir():
            raise DataError(f"{ENV_VAR}={given} is not a folder. Unset it to fetch into {DEFAULT_DIR}.")
        states, source = check(folder), f"{ENV_VAR} (checked, never written)"
    elif args.action == "fetch":
        mirror = os.environ.get(MIRROR_VAR) or None
        states, source = fetch(DEFAULT_DIR, mirror), mirror or ORIGIN_BASE
        folder = DEFAULT_DIR
    else:
        folder, source = DEFAULT_DIR, None
        states = check(folder)
    bad = {name: state for name, state in states.items() if state not in ("ok", "fetched")}
    result = {"folder": str(folder.resolve()), "source": source, "files": states,
              "origins": {item.name: f"{ORIGIN_BASE}/{item.origin}" for item in FILES}, "exit_code": int(bool(bad))}
    if bad:
        result["error"] = (f"{folder} has {len(bad)} file(s) missing or with a wrong SHA-256: "
                           f"{', '.join(f'{n} ({s})' for n, s in bad.items())}. "
                           + ("Run `make data` (python -m marlinkit data fetch)." if not given else
                              f"Put the right files there or unset {ENV_VAR}."))
    return result
