"""bench/night.py's own parts (issue 33): the nights it publishes and its comparison with a full rebuild."""

from __future__ import annotations

import json
import sys

from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.records.canonical import digest_of
from tests.support import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import night  # noqa: E402


def test_a_night_adds_the_next_days_runs_of_existing_series_or_of_a_new_gpu(tmp_path):
    url = f"sqlite:///{tmp_path}/c.sqlite"
    night.build(url, series=20, sweeps=3)
    same = night.night_records(url, 5, 1, new_gpu=False)
    assert [r["kind"] for r in same] == ["BenchmarkRun"] * 5
    with CatalogueStore.open(url, read_only=True) as store:
        environment = next(store.manifests(kinds=["ExecutionEnvironment"]))
        old = {
            r["spec"]["sourceNative"]["externalId"].rsplit("/", 1)[0] for r in store.manifests(kinds=["BenchmarkRun"])
        }
    for run in same:  # the same series (externalId without its time), one day after the newest run
        head, stamp = run["spec"]["sourceNative"]["externalId"].rsplit("/", 1)
        assert head in old and stamp.startswith("2025-01-04")
        assert run["spec"]["environmentDigest"] == digest_of(environment)
    gpu = night.night_records(url, 5, 2, new_gpu=True)
    assert gpu[0]["kind"] == "ExecutionEnvironment" and gpu[0]["spec"]["hardware"]["product"] == "NVIDIA B200"
    assert {r["spec"]["environmentDigest"] for r in gpu[1:]} == {digest_of(gpu[0])}
    assert all("/nvidia-b200/" in r["spec"]["sourceNative"]["externalId"] for r in gpu[1:])


def test_the_comparison_with_a_rebuild_ignores_only_the_build_stamps(tmp_path):
    one, two = tmp_path / "night", tmp_path / "rebuild"
    for side, stamp, note in ((one, "2026-01-01", "Nothing changed"), (two, "2026-02-02", "First build")):
        (side / "exports").mkdir(parents=True)
        (side / "report").mkdir()
        manifest = {"generatedAt": stamp, "lineCount": 3}
        (side / "exports" / "kernelindex-catalogue.jsonl.manifest.json").write_text(json.dumps(manifest))
        page = f'<h1>x</h1><section id="changed"><h2>Data updated</h2><p>{note}</p></section><p>3 runs</p>'
        (side / "report" / "index.html").write_text(page)
        (side / "exports" / "kernelindex-catalogue.jsonl").write_text("a\n")
    assert night.differences(one, two) == []
    (two / "exports" / "kernelindex-catalogue.jsonl").write_text("b\n")
    (two / "report" / "index.html").write_text((one / "report" / "index.html").read_text().replace("3 runs", "4 runs"))
    (two / "report" / "extra.json").write_text("{}")
    manifest = json.loads((two / "exports" / "kernelindex-catalogue.jsonl.manifest.json").read_text())
    (two / "exports" / "kernelindex-catalogue.jsonl.manifest.json").write_text(json.dumps({**manifest, "lineCount": 4}))
    assert night.differences(one, two) == [
        "exports/kernelindex-catalogue.jsonl",
        "exports/kernelindex-catalogue.jsonl.manifest.json",
        "report/extra.json (only in the rebuild)",
        "report/index.html",
    ]
