"""A bisection's verdict on the regressions page and in regressions.json: with its group, the commits
tried with their values, a link to the confirmed commit, and the confirmed culprit first in the summary."""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from kernelindex_pipeline.detection.detect import detect_regressions
from kernelindex_pipeline.detection.document import regressions_json
from kernelindex_pipeline.reporting.regressions_page import write_regressions
from tests.detection.test_detect import panel

CULPRIT = "e98d0cd81c14dbb4082d8e005013ca5765baa170"


def stepped_report():
    rng = np.random.default_rng(7)
    levels = 200_000 * np.exp(np.clip(rng.normal(0, 0.01, size=(24, 10)), -0.025, 0.025))
    levels[:4, 5:] *= 1.3  # kernel0's four cases slower from the sixth run on
    return detect_regressions(panel(levels))


def verdict_document(group_id: str) -> dict:
    """A bisection JSON as `kernelindex-pipeline bisect` writes it (cut to what the page reads)."""
    steps = [
        {"step": 1, "commit": "a" * 40, "role": "good", "outcome": "before", "value": 2.0e6, "interval": [1.9e6, 2.1e6]},
        {"step": 2, "commit": "b" * 40, "role": "bad", "outcome": "after", "value": 2.6e6, "interval": [2.5e6, 2.7e6]},
        {"step": 3, "commit": "c" * 40, "role": "candidate", "outcome": "skipped", "value": None, "interval": None,
         "reason": "benchmark_rms_norm.py failed: ModuleNotFoundError"},
        {"step": 4, "commit": CULPRIT, "role": "candidate", "outcome": "after", "value": 2.6e6, "interval": [2.5e6, 2.7e6]},
    ]  # fmt: skip
    return {
        "format": "kernelindex-pipeline/bisection/v1",
        "plan": {"group": group_id, "harness": "b" * 40, "series": {"kernel": "kernel0", "mode": "forward"}},
        "verdict": "confirmed",
        "label": f"confirmed {CULPRIT}",
        "culprit": CULPRIT,
        "culpritUrl": f"https://github.com/linkedin/Liger-Kernel/commit/{CULPRIT}",
        "parent": "a" * 40,
        "reason": "the first commit at the after level",
        "measurements": 3,
        "maxMeasurements": 4,
        "gpuSeconds": 6.4,
        "steps": steps,
    }


def test_a_groups_bisection_is_in_the_json_and_on_the_page_with_the_culprit_first(tmp_path):
    report = stepped_report()
    groups = regressions_json(report)["groups"]
    assert groups and all(g["bisection"] is None for g in groups)  # no bisection yet: said, not left out
    group_id = groups[0]["id"]
    bisected = dataclasses.replace(report, bisections={group_id: verdict_document(group_id)})
    paths = write_regressions(bisected, tmp_path)
    saved = json.loads(paths.json.read_text())
    bisection = saved["groups"][0]["bisection"]
    assert bisection["verdict"] == "confirmed" and bisection["culprit"] == CULPRIT
    assert [s["commit"][:1] for s in bisection["steps"]] == ["a", "b", "c", "e"] and bisection["steps"][2][
        "outcome"
    ] == "skipped"
    page = paths.page.read_text()
    assert f'<div class="bisection" data-verdict="confirmed" data-culprit="{CULPRIT}">' in page
    assert (
        f'<a class="culprit" href="https://github.com/linkedin/Liger-Kernel/commit/{CULPRIT}"><code>e98d0cd8</code></a>'
        in page
    )
    assert "2,600.0 µs" in page and "ModuleNotFoundError" in page
    summary = page.split('<p class="summary">')[2].split("</p>")[0]  # the "What changed it" summary
    assert summary.startswith("confirmed by bisection: e98d0cd8 (")
    # a bisection of a group the report no longer has is not shown
    other = write_regressions(
        dataclasses.replace(report, bisections={"g-000000000000": verdict_document("g-0")}), tmp_path / "o"
    )
    assert 'class="bisection"' not in other.page.read_text()
