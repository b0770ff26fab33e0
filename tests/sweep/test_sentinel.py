"""A sentinel that could not run is a problem line of the import, never a silently missing run."""

from kernelindex_pipeline.liger.catalogue import default_catalogue
from kernelindex_pipeline.liger.normalize import MeasuredContext
from kernelindex_pipeline.liger.sentinel import PLAN, sentinel_manifests
from kernelindex_pipeline.sweep.sentinel import collect_sentinel, summary_lines


def test_a_failed_sentinel_is_reported_not_published(tmp_path):
    measurements = collect_sentinel("end", [], {}, "NVIDIA H200", "timed_out: None")
    assert [(m["operation"], m["status"], m["error"]) for m in measurements] == [
        (o["name"], "failed", "timed_out: None") for o in PLAN["operations"]
    ]
    assert summary_lines(measurements)[0] == f"sentinel {PLAN['operations'][0]['name']}: end timed_out: None"
    manifests, problems = sentinel_manifests(MeasuredContext(software={}, sentinel=measurements), default_catalogue())
    assert manifests == []
    assert problems == [f"sentinel {o['name']} (end) did not run: timed_out: None" for o in PLAN["operations"]]
