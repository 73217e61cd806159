"""Result files: one run per configuration, resumed by its hash."""

from __future__ import annotations

import pandas as pd
import pytest

from marlinkit.repro.keys import config_hash
from marlinkit.runs import ResultStore


def test_result_store_resumes_only_for_the_same_configuration(tmp_path):
    store = ResultStore(tmp_path)
    table = pd.DataFrame({"episode": [0, 1], "performance": [0.25, 1.0]})
    config = {"scenario": "single_slot", "seed": 0}
    assert not store.is_complete("run", config)
    store.save("run", table, config, llm_backend="none")
    assert store.is_complete("run", config)
    assert not store.is_complete("run", {**config, "seed": 1})
    pd.testing.assert_frame_equal(store.load("run"), table)
    sidecar = store.load_sidecar("run")
    assert sidecar["config"] == config and sidecar["llm_backend"] == "none"
    assert sidecar["config_hash"] == config_hash(config) and "numpy" in sidecar["versions"]
    assert not list(tmp_path.glob("*.tmp")), "temporary files must not be left behind"
    assert store.table_path("run").stat().st_mode & 0o044, "result files are readable by others, like any file"


def test_result_store_cached_computes_once_per_configuration(tmp_path):
    store, calls = ResultStore(tmp_path), []

    def compute():
        calls.append(1)
        return pd.DataFrame({"trial": [0, 1], "performance": [0.5, 0.75]})

    first = store.cached("run", {"seed": 0}, compute, llm="scripted")
    again = store.cached("run", {"seed": 0}, compute, llm="scripted")
    pd.testing.assert_frame_equal(first, again)
    assert len(calls) == 1 and store.load_sidecar("run")["llm"] == "scripted"
    store.cached("run", {"seed": 1}, compute)  # another configuration: computed again
    assert len(calls) == 2


def test_config_hash_ignores_key_order_but_not_values():
    assert config_hash({"a": 1, "b": 2}) == config_hash({"b": 2, "a": 1})
    assert config_hash({"a": 1}) != config_hash({"a": 2})


def test_a_large_table_is_written_compressed_with_stable_bytes_and_read_back_checked(tmp_path, monkeypatch):
    import gzip

    from marlinkit import runs
    from marlinkit.files import ResultFileError

    monkeypatch.setattr(runs, "COMPRESS_OVER_BYTES", 100)
    store = ResultStore(tmp_path)
    table = pd.DataFrame({"episode": range(50), "performance": [i / 7 for i in range(50)]})
    store.save("big", table, {"seed": 0})
    assert store.table_path("big").name == "big.csv.gz" and not (tmp_path / "big.csv").exists()
    first = store.table_path("big").read_bytes()
    store.save("big", table, {"seed": 0})
    assert store.table_path("big").read_bytes() == first  # no timestamp in the gzip header
    assert store.is_complete("big", {"seed": 0})
    pd.testing.assert_frame_equal(store.load("big"), table)
    assert store.load_sidecar("big")["table_sha256"] == __import__("hashlib").sha256(gzip.decompress(first)).hexdigest()
    store.table_path("big").write_bytes(first[: len(first) // 2])  # truncated
    with pytest.warns(RuntimeWarning, match="cannot be read"):
        assert not store.is_complete("big", {"seed": 0})
    with pytest.raises(ResultFileError, match="big.csv.gz"):
        store.load("big")
    store.save("big", table.head(3), {"seed": 0})  # small again: plain CSV, the old compressed file gone
    assert store.table_path("big").name == "big.csv" and not (tmp_path / "big.csv.gz").exists()
