"""`kernelindex-pipeline report`: the static report of records files that `transform` wrote."""

from __future__ import annotations

from html.parser import HTMLParser

from liger_rows import csv_bytes, row

from kernelindex_pipeline.cli import main


class Sections(HTMLParser):
    def __init__(self):
        super().__init__()
        self.kernels: dict[str, dict[str, str]] = {}
        self.coverage: list[dict[str, str]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "section" and "kernel" in classes:
            self.kernels[a["data-kernel"]] = a
        elif tag == "tr" and "coverage" in classes:
            self.coverage.append(a)


def test_report_of_two_transforms(tmp_path, capsys):
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
    assert main(["report", "--records", *map(str, outs), "--out", str(tmp_path / "report")]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {tmp_path / 'report' / 'index.html'}" in printed
    page = Sections()
    page.feed((tmp_path / "report" / "index.html").read_text(encoding="utf-8"))
    # one kernel, 2 providers x 2 hidden sizes = 4 series, each followed across both versions
    assert page.kernels["rms_norm"]["data-series-count"] == "4"
    assert list((tmp_path / "report" / "charts").glob("rms-norm-*-versions.svg"))
    # the report.json next to each records file gives the coverage table: one cell per provider and version
    assert sorted((c["data-provider"], c["data-version"], c["data-rows"], c["data-runs"]) for c in page.coverage) == [
        ("huggingface", "0.5.0", "2", "2"),
        ("huggingface", "0.5.1", "2", "2"),
        ("liger", "0.5.0", "2", "2"),
        ("liger", "0.5.1", "2", "2"),
    ]


def test_report_errors_are_one_line(tmp_path, capsys):
    assert main(["report", "--records", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"kernelindex-pipeline report: error: {tmp_path / 'missing.jsonl'}: no such file"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    assert main(["report", "--records", str(bad), "--out", str(tmp_path / "r")]) == 1
    assert capsys.readouterr().err.startswith(f"kernelindex-pipeline report: error: {bad}")
    assert main(["report", "--records", str(bad), "--catalogue", "sqlite://", "--out", str(tmp_path / "r")]) == 2
