"""The static HTML report on a small constructed catalogue (no browser needed)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from kernelindex_pipeline.reporting import build_report
from kernelindex_pipeline.reporting.example_records import SampleCatalogue


class ReportParser(HTMLParser):
    """Collects the report's data-* structure: kernel sections, figures, regression rows."""

    def __init__(self):
        super().__init__()
        self.body: dict[str, str] = {}
        self.kernels: dict[str, dict[str, str]] = {}
        self.figures: list[dict[str, str]] = []
        self.images: list[str] = []
        self.regression_rows: list[dict[str, str]] = []
        self.toc_links: list[str] = []
        self.ids: set[str] = set()
        self._in_toc = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        classes = (a.get("class") or "").split()
        if tag == "body":
            self.body = a
        elif tag == "nav" and a.get("id") == "toc":
            self._in_toc = True
        elif tag == "a" and self._in_toc:
            self.toc_links.append(a["href"])
        elif tag == "section" and "kernel" in classes:
            self.kernels[a["data-kernel"]] = a
        elif tag == "figure" and "chart" in classes:
            self.figures.append(a)
        elif tag == "img":
            self.images.append(a["src"])
        elif tag == "tr" and "regression" in classes:
            self.regression_rows.append(a)

    def handle_endtag(self, tag):
        if tag == "nav":
            self._in_toc = False


def parse(path) -> ReportParser:
    parser = ReportParser()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def small_catalogue() -> SampleCatalogue:
    """rms_norm swept over seq on H100 (Liger, torch baseline, torch.compile; two versions measured three
    times each with 1 % noise, Liger forward 30% slower in 0.8.1), plus swiglu on A100 at one version only
    with a single workload."""
    catalogue = SampleCatalogue()
    for run, (version, month, liger_factor) in enumerate(
        (
            ("0.8.0", 3, 1.0),
            ("0.8.0", 4, 1.0),
            ("0.8.0", 5, 1.0),
            ("0.8.1", 6, 1.3),
            ("0.8.1", 7, 1.3),
            ("0.8.1", 8, 1.3),
        )
    ):
        for mode in ("forward", "backward"):
            for provider, cost in (("liger", 1.0), ("torch", 2.0), ("torch_compile", 1.5)):
                for seq in (512, 1024, 2048, 4096):
                    slower = liger_factor if (provider, mode) == ("liger", "forward") else 1.0
                    noise = 1 + 0.01 * ((run * 7 + seq // 512) % 3 - 1)
                    catalogue.run(
                        kernel="rms_norm",
                        mode=mode,
                        provider=provider,
                        axes={"seq": seq, "hidden": 4096},
                        version=version,
                        median_ns=int(seq * 1000 * cost * slower * noise),
                        timestamp=f"2025-{month:02d}-01 00:00:00",
                    )
    for provider in ("liger", "huggingface"):
        catalogue.run(
            kernel="swiglu",
            mode="full",
            provider=provider,
            gpu="NVIDIA A100-SXM4-80GB",
            axes={"batch": 4, "seq": 2048},
            version="0.2.1",
            median_ns=3_000_000,
        )
    return catalogue


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    return build_report(small_catalogue().manifests(), out)


def test_counts_and_summary(report):
    # rms_norm: 3 providers x 2 modes x 4 seq = 24 series; swiglu: 2 series
    assert report.counts["kernels"] == 2
    assert report.counts["series"] == 26
    assert report.counts["regressions"] == 4  # Liger forward at each of the four seq values
    assert report.counts["runs"] == 24 * 6 + 2
    assert "| 2 | 26 |" in report.summary_markdown
    assert "0.8.0 (2025-05-01) → 0.8.1 (2025-06-01)" in report.summary_markdown


def test_html_structure_matches_the_input(report):
    page = parse(report.path)
    assert page.body["data-series-count"] == "26"
    assert set(page.kernels) == {"rms_norm", "swiglu"}
    assert page.kernels["rms_norm"]["data-series-count"] == "24"
    assert page.kernels["swiglu"]["data-series-count"] == "2"
    # every series is accounted for by exactly one latency chart
    for kernel, section in page.kernels.items():
        latency = [f for f in page.figures if f["data-kernel"] == kernel and f["data-chart-kind"] == "latency"]
        assert latency, f"no latency chart for {kernel}"
        assert sum(int(f["data-series-count"]) for f in latency) == int(section["data-series-count"])
        assert int(section["data-chart-count"]) == sum(1 for f in page.figures if f["data-kernel"] == kernel)
    kinds = sorted(f["data-chart-kind"] for f in page.figures if f["data-kernel"] == "rms_norm")
    assert kinds == ["latency", "speedup", "versions"]
    kinds = sorted(f["data-chart-kind"] for f in page.figures if f["data-kernel"] == "swiglu")
    assert kinds == ["latency", "speedup"]  # one version only: no version chart
    assert len(page.figures) == report.counts["charts"] == int(page.body["data-chart-count"])
    # table of contents links to every kernel section
    assert sorted(page.toc_links) == sorted(f"#{s['id']}" for s in page.kernels.values())
    assert all(link[1:] in page.ids for link in page.toc_links)


def test_regressions_are_highlighted(report):
    page = parse(report.path)
    # once in the regressions table, once in the kernel's own section
    assert len(page.regression_rows) == 8
    assert {r["data-kernel"] for r in page.regression_rows} == {"rms_norm"}
    flagged = [f for f in page.figures if "has-regression" in f["class"]]
    assert {f["data-chart-kind"] for f in flagged} == {"latency", "versions"}
    saved = json.loads((report.path.parent / "regressions.json").read_text())
    assert saved["counts"]["slowdowns"] == 4 and saved["series"] == 24 and saved["insufficient"] == 2
    assert {
        (r["provider"], r["mode"], r["before"]["ligerVersion"], r["after"]["ligerVersion"], r["cause"])
        for r in saved["changes"]
    } == {("liger", "forward", "0.8.0", "0.8.1", "unknown")}  # no commits known
    assert all(
        abs(r["magnitude"] - 1.3) < 0.03 and r["ci95"][0] < r["magnitude"] < r["ci95"][1] for r in saved["changes"]
    )
    assert (report.path.parent / "regressions.html").exists()


def test_charts_are_svg_plots_next_to_the_page(report):
    page = parse(report.path)
    assert len(page.images) == len(page.figures)
    for src in page.images:
        path = report.path.parent / src
        root = ET.parse(path).getroot()
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        # a real plot: axes with line data, not an empty canvas
        ids = {el.get("id", "") for el in root.iter()}
        assert any(i.startswith("axes_") for i in ids), src
        assert any(i.startswith("line2d_") for i in ids), src


def test_version_chart_draws_every_liger_version(report):
    page = parse(report.path)
    [chart] = [f for f in page.figures if f["data-chart-kind"] == "versions"]
    index = page.figures.index(chart)
    svg = (report.path.parent / page.images[index]).read_text(encoding="utf-8")
    assert "liger 0.8.0" in svg and "liger 0.8.1" in svg  # legend entries (SVG text kept as text)
    assert "torch" not in svg  # only Liger providers on the version chart


def test_single_version_kernel_says_insufficient(report):
    text = report.path.read_text(encoding="utf-8")
    assert "Only Liger 0.2.1 measured for this kernel on NVIDIA A100 SXM4-80GB" in text
    assert report.regressions.counts()["insufficient"] == 2


def test_rebuild_replaces_the_previous_report(tmp_path):
    first = build_report(small_catalogue().manifests(), tmp_path)
    old_charts = sorted(p.name for p in (tmp_path / "charts").iterdir())
    only_swiglu = [
        m
        for m in small_catalogue().manifests()
        if m["kind"] != "BenchmarkRun" or m["spec"]["sourceNative"]["benchmark"].startswith("swiglu")
    ]
    second = build_report(only_swiglu, tmp_path)
    assert first.path == second.path and second.counts["kernels"] == 1
    new_charts = sorted(p.name for p in (tmp_path / "charts").iterdir())
    assert new_charts != old_charts and all(name.startswith("swiglu") for name in new_charts)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".building")] == []


def test_empty_catalogue_gives_an_empty_but_valid_report(tmp_path):
    result = build_report([], tmp_path)
    assert result.counts["kernels"] == result.counts["series"] == result.counts["charts"] == 0
    assert "Insufficient data" in result.path.read_text(encoding="utf-8")
