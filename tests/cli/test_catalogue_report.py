"""`kernelindex-pipeline report` (the old name of `site`, which it builds now: issue 21) of records files that
`transform` wrote."""

from __future__ import annotations

import json
import re

import pytest

from kernelindex_pipeline.cli import main
from kernelindex_pipeline.reporting.site_files import read_js_payload
from tests.support.liger_rows import csv_bytes, row


@pytest.mark.parametrize("command", ["report", "site"])
def test_site_of_two_transforms(tmp_path, capsys, command):
    outs = []
    for version, timestamp in (("0.5.0", "2025-01-02 03:04:05"), ("0.5.1", "2025-02-02 03:04:05")):
        rows = [
            row(liger_version=version, timestamp=timestamp, x_value=str(h), kernel_provider=provider)
            for h in (1024, 2048)
            for provider in ("liger", "huggingface")
        ]
        csv_path = tmp_path / f"{version}.csv"
        csv_path.write_bytes(csv_bytes(rows))
        out = tmp_path / version
        assert main(["transform", str(csv_path), "--out", str(out)]) == 0
        outs.append(out / "records.jsonl")
    capsys.readouterr()
    out = tmp_path / "site"
    assert main([command, "--records", *map(str, outs), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {out / 'index.html'}" in printed and "1 kernels, 4 series, 8 runs" in printed
    # one kernel, 2 providers x 2 hidden sizes = 4 series, each followed across both versions
    state = json.loads((out / "site-state.json").read_text(encoding="utf-8"))["kernels"]
    assert state["rms_norm"]["series"] == 4 and state["rms_norm"]["versions"] == ["0.5.0", "0.5.1"]
    data = read_js_payload((out / "data" / "rms-norm.js").read_text(encoding="utf-8"))
    assert all([p[0] for p in points] == [0, 1] for points in data["points"])
    # the report.json next to each records file gives the coverage: every row became a run, no cell is marked
    page = (out / "index.html").read_text(encoding="utf-8")
    cells = re.findall(r'<td class="([^"]+)" data-gpu="[^"]+" data-version="([^"]+)" data-runs="(\d+)"', page)
    assert sorted((v, n) for _, v, n in cells) == [("0.5.0", "4"), ("0.5.1", "4")]
    assert "Yellow: rows of that cell did not all become runs" in page and "incomplete" not in page


def test_report_errors_are_one_line(tmp_path, capsys):
    assert main(["report", "--records", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"kernelindex-pipeline report: error: {tmp_path / 'missing.jsonl'}: no such file"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    assert main(["report", "--records", str(bad), "--out", str(tmp_path / "r")]) == 1
    assert capsys.readouterr().err.startswith(f"kernelindex-pipeline report: error: {bad}")
    assert main(["report", "--records", str(bad), "--catalogue", "sqlite://", "--out", str(tmp_path / "r")]) == 2


def test_site_of_a_catalogue_streams_it_and_draws_what_its_records_draw(tmp_path, capsys):
    """`site --catalogue` reads the catalogue as streams (detection's, then the build's) and draws the same data
    as `site --records` of the records published into it."""
    from kernelindex_pipeline.catalogue.store import CatalogueStore
    from kernelindex_pipeline.records.io import load_manifests

    rows = [
        row(liger_version=version, timestamp=stamp, x_value=str(h))
        for version, stamp in (("0.5.0", "2025-01-02 03:04:05"), ("0.5.1", "2025-02-02 03:04:05"))
        for h in (1024, 2048)
    ]
    csv_path = tmp_path / "rows.csv"
    csv_path.write_bytes(csv_bytes(rows))
    assert main(["transform", str(csv_path), "--out", str(tmp_path / "t")]) == 0
    records = tmp_path / "t" / "records.jsonl"
    url = f"sqlite:///{tmp_path / 'catalogue.db'}"
    with CatalogueStore.open(url) as store:
        store.publish([m for _, m in load_manifests(records)], partition="p", source=None, report=None)
    capsys.readouterr()
    assert main(["site", "--catalogue", url, "--out", str(tmp_path / "from-catalogue")]) == 0
    assert "1 kernels, 2 series, 4 runs" in capsys.readouterr().out
    assert main(["site", "--records", str(records), "--out", str(tmp_path / "from-records")]) == 0
    drawn = [
        read_js_payload((tmp_path / name / "data" / "rms-norm.js").read_text(encoding="utf-8"))
        for name in ("from-catalogue", "from-records")
    ]
    assert drawn[0]["series"] == drawn[1]["series"] and len(drawn[0]["points"]) == 2
    values = [[[p[1] for p in points] for points in d["points"]] for d in drawn]
    assert values[0] == values[1]
    # built on the previous build in its folder: nothing published since, nothing rebuilt; --rebuild: everything
    out = str(tmp_path / "from-catalogue")
    assert main(["site", "--catalogue", url, "--out", out]) == 0
    assert "recomputed: 0 of 1 kernels rebuilt (no publication brought records since" in capsys.readouterr().out
    assert main(["site", "--catalogue", url, "--out", out, "--rebuild"]) == 0
    assert "built every kernel: a full rebuild was asked for" in capsys.readouterr().out
    assert main(["site", "--records", str(records), "--out", out, "--rebuild"]) == 2  # records are read whole anyway
