"""Raw samples of do_bench: the hook in a real script process over a stand-in triton of both code shapes
(triton >= 3.2: return_mode="all" and _summarize_statistics; <= 3.1: an inline torch.quantile over a
float32 tensor), the spool, the artifacts, the pairing of rows with calls, and the runs' statistics."""

import hashlib
import json
import os
import stat
import subprocess
import sys

import numpy as np
import pytest

from kernelindex_pipeline.liger.sample_statistics import (
    bootstrap_median_interval,
    bootstrap_medians,
    latency_statistics,
    row_key,
    with_raw_samples,
)
from kernelindex_pipeline.sweep.samples import (
    HOOK_DIR,
    ArtifactDirectory,
    collect_samples,
    hook_environment,
    pair_rows,
    private_spool,
    read_spool,
    verify_artifact,
)
from tests.support.standin_release import build_fake_torch

# name -> (the call's arguments, the same timing arguments with every sample returned).
LIGER_FORMS = {  # every form Liger's scripts 0.5.x-0.8.5 use (444 calls, all with quantiles=QUANTILES)
    "quantiles_rep": ("fn, quantiles=Q, rep=100", "fn, rep=100"),
    "grad_rep_quantiles": ("fn, grad_to_none=[x], rep=100, quantiles=Q", "fn, grad_to_none=[x], rep=100"),
    "quantiles_grad_rep": ("fn, quantiles=Q, grad_to_none=[x], rep=500", "fn, grad_to_none=[x], rep=500"),
    "with_warmup": ("fn, quantiles=Q, grad_to_none=[x], rep=10, warmup=5", "fn, grad_to_none=[x], rep=10, warmup=5"),
    "rep_quantiles": ("fn, rep=100, quantiles=Q", "fn, rep=100"),
}
OTHER_FORMS = {  # the rest of do_bench's interface
    "positional": "fn, 5, 20, None, Q",
    "one_quantile": "fn, quantiles=[0.5], rep=20",
    "default_mean": "fn, rep=20",
    "min": "fn, rep=20, return_mode='min'",
    "max": "fn, rep=20, return_mode='max'",
    "median": "fn, rep=20, return_mode='median'",
}

PROBE = r"""
import json, sys
import torch
import triton.testing as t

fn = lambda: None
x = torch.randn(8)
Q = [0.5, 0.2, 0.8]
forms = json.loads(sys.argv[1])
out = {"wrapped": getattr(t.do_bench, "__kernelindex_wrapped__", False), "forms": {}}
if not out["wrapped"]:
    t.do_bench.__wrapped__ = t.do_bench  # no hook: both calls are the original's
for seed, (name, (call, all_call)) in enumerate(forms.items(), start=7):
    t._standin_reset(seed)
    original = eval("t.do_bench.__wrapped__(" + call + ")")
    t._standin_reset(seed)
    wrapped = eval("t.do_bench(" + call + ")")
    timings = None
    if all_call and hasattr(t, "_summarize_statistics"):
        t._standin_reset(seed)
        timings = eval("t.do_bench.__wrapped__(" + all_call + ", return_mode='all')")
    out["forms"][name] = {
        "original": repr(original), "wrapped": repr(wrapped),
        "types": [type(original).__name__, type(wrapped).__name__],
        "item_types": [[type(v).__name__ for v in r] if isinstance(r, list) else None for r in (original, wrapped)],
        "timings": timings,
    }
print(json.dumps(out))
"""


def run_probe(tmp_path, flavour, forms, spool=True):
    fake = build_fake_torch(tmp_path / flavour, "NVIDIA H200", triton=flavour)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELINDEX_")}
    env["PYTHONPATH"] = os.pathsep.join([str(HOOK_DIR), str(fake)])
    spool_file = private_spool(tmp_path)
    if spool:
        env.update(hook_environment(spool_file.fileno()))
    completed = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(forms)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        pass_fds=(spool_file.fileno(),),
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout), spool_file


def all_forms(flavour):
    forms = {name: list(pair) for name, pair in LIGER_FORMS.items()}
    forms.update({name: [call, None] for name, call in OTHER_FORMS.items()})
    if flavour == "summarize":
        forms["all"] = ["fn, rep=20, return_mode='all'", None]
    return forms


@pytest.mark.parametrize("flavour", ["summarize", "inline"])
def test_wrapped_do_bench_returns_what_the_original_returns(tmp_path, flavour):
    forms = all_forms(flavour)
    out, _ = run_probe(tmp_path, flavour, forms)
    assert out["wrapped"] is True
    for name, seen in out["forms"].items():
        assert seen["wrapped"] == seen["original"], name
        assert seen["types"][0] == seen["types"][1], name
        assert seen["item_types"][0] == seen["item_types"][1], name
    # The stand-in's clock gives each form its own timings: equality above is no accident of constants.
    assert len({seen["original"] for seen in out["forms"].values()}) == len(forms)


@pytest.mark.parametrize("flavour", ["summarize", "inline"])
def test_every_quantile_call_keeps_its_timed_samples(tmp_path, flavour):
    out, spool = run_probe(tmp_path, flavour, all_forms(flavour))
    calls, unreadable = read_spool(spool)
    assert unreadable == 0
    with_quantiles = [n for n, (call, _) in all_forms(flavour).items() if "Q" in call or "quantiles" in call]
    sampled = [c for c in calls if c.samples]
    # summarize: every call has samples (the hook always asks for "all"); inline: calls with quantiles.
    expected = len(out["forms"]) if flavour == "summarize" else len(with_quantiles)
    assert len(sampled) == expected
    by_returned = {json.dumps(c.returned): c for c in sampled}
    for name in with_quantiles:
        returned = json.loads(out["forms"][name]["original"])
        call = by_returned[json.dumps(returned)]
        assert call.record["method"] == ("return_mode_all" if flavour == "summarize" else "torch_quantile_watch")
        timings = out["forms"][name]["timings"]
        if timings is not None:  # the very timings the original measured, in order
            assert call.samples == timings
        # The returned quantiles follow from the samples (linear interpolation, as triton and torch do).
        levels = call.record["arguments"]["quantiles"]
        expected_quantiles = np.quantile(np.array(call.samples), levels).tolist()
        assert (call.returned if len(levels) > 1 else [call.returned]) == pytest.approx(expected_quantiles, rel=1e-6)
        assert call.case is None  # no utils.run_benchmarks in this process


def test_without_its_spool_variable_the_hook_does_nothing(tmp_path):
    out, spool = run_probe(tmp_path, "summarize", {"quantiles_rep": list(LIGER_FORMS["quantiles_rep"])}, spool=False)
    assert out["wrapped"] is False
    assert read_spool(spool) == ([], 0)


def test_the_hosts_own_sitecustomize_still_runs(tmp_path):
    host_site = tmp_path / "host-site"
    host_site.mkdir()
    (host_site / "sitecustomize.py").write_text("import os\nos.environ['HOST_SITECUSTOMIZE'] = 'ran'\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HOOK_DIR), str(host_site)])}
    spool = private_spool(tmp_path)
    env.update(hook_environment(spool.fileno()))
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; print(os.environ.get('HOST_SITECUSTOMIZE'), any(type(f).__name__ == '_Finder' for f in sys.meta_path))",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        pass_fds=(spool.fileno(),),
    )
    assert completed.stdout.split() == ["ran", "True"], completed.stderr


# --- statistics ----------------------------------------------------------------------------------------
def test_latency_statistics_of_known_samples():
    samples = [float(v) for v in range(21, 0, -1)]  # 1..21 ms, unordered
    stats = latency_statistics(samples)
    assert stats["samples"] == 21
    latency = stats["latencyNs"]
    assert (latency["minimum"], latency["maximum"]) == (1_000_000, 21_000_000)
    assert (latency["p05"], latency["p95"]) == (2_000_000, 20_000_000)  # 0.05 * 20 = order statistic 1
    assert latency["mad"] == 5_000_000  # |x - 11| is 0, 1, 1, ..., 10, 10: median 5
    low, high = latency["confidence95"]
    assert 1_000_000 <= low <= 11_000_000 <= high <= 21_000_000


def test_bootstrap_is_fixed_by_its_seed():
    rng = np.random.default_rng(3)
    samples = (0.1 + rng.gamma(2.0, 0.01, size=501)).tolist()
    first = bootstrap_median_interval(samples)
    assert bootstrap_median_interval(list(samples)) == first  # same samples, same interval, every time
    assert bootstrap_median_interval(samples, seed=13) != first  # the seed is what fixes it
    assert first[0] < float(np.median(samples)) < first[1]
    assert bootstrap_median_interval([0.25] * 40) == (0.25, 0.25)


def test_bootstrap_medians_follow_the_law_of_resampling():
    # Three values: a resample's median is the smallest with P(>= 2 of 3 draws are it) = 7/27, the
    # middle with 13/27, the largest with 7/27. Four values (even n): the median averages two draws' ranks.
    medians = bootstrap_medians([1.0, 2.0, 3.0], resamples=200_000)
    shares = [float(np.mean(medians == v)) for v in (1.0, 2.0, 3.0)]
    assert shares == pytest.approx([7 / 27, 13 / 27, 7 / 27], abs=0.005)
    rng = np.random.default_rng(5)
    values = np.array([1.0, 2.0, 4.0, 8.0])
    brute = np.median(values[rng.integers(0, 4, size=(200_000, 4))], axis=1)
    drawn = bootstrap_medians(values, resamples=200_000)
    for level in sorted(set(brute.tolist())):
        assert float(np.mean(drawn == level)) == pytest.approx(float(np.mean(brute == level)), abs=0.005)


def test_samples_must_be_finite_milliseconds():
    for bad in ([], [1.0, float("nan")], [-1.0]):
        with pytest.raises(ValueError, match="non-empty list of finite"):
            latency_statistics(bad)


def test_enrichment_adds_statistics_and_artifact_and_leaves_memory_runs_alone():
    spec = {
        "status": "passed",
        "timing": {"primaryStatistic": "median", "latencyNs": {"median": 11_000_000}},
        "evidence": {"logs": {"uri": "file:///l.log", "digest": "sha256:" + "0" * 64}},
    }
    entry = {
        "artifact": {"uri": "file:///s.json", "digest": "sha256:" + "1" * 64},
        **latency_statistics([10.0, 11.0, 12.0]),
    }
    enriched = with_raw_samples(spec, entry)
    assert enriched["timing"]["latencyNs"]["median"] == 11_000_000
    assert enriched["timing"]["samples"] == 3
    assert enriched["timing"]["rawSamples"] == enriched["evidence"]["rawSamples"] == entry["artifact"]
    assert enriched["evidence"]["logs"] == spec["evidence"]["logs"]
    assert "rawSamples" not in spec["timing"]  # the input is not changed
    memory = {
        "status": "passed",
        "measurements": [{"metric": "peak_memory", "unit": "bytes", "statistic": "median", "value": 1}],
    }
    assert with_raw_samples(memory, entry) is memory


# --- pairing rows with calls -------------------------------------------------------------------------------
def _row(provider, x, y, metric="speed"):
    return {
        "kernel_name": "k",
        "kernel_provider": provider,
        "kernel_operation_mode": "full",
        "metric_name": metric,
        "x_name": "T",
        "x_value": str(x),
        "extra_benchmark_config_str": "{}",
        "gpu_name": "G",
        "y_value_50": repr(y[0]),
        "y_value_20": repr(y[1]),
        "y_value_80": repr(y[2]),
    }


def _spool(path, calls):
    path.write_text(
        "".join(json.dumps({"call": i, **c}) + "\n" for i, c in enumerate(calls, start=1)) + '{"call": 9, "samp'
    )


def _collect(spool, tmp_path, rows):
    with spool.open("rb") as handle, ArtifactDirectory(tmp_path / "samples") as artifacts:
        return collect_samples(handle, artifacts, "benchmark_k.py", rows)


def test_rows_pair_with_their_calls_by_case_then_by_value(tmp_path):
    case = {
        "kernel_name": "k",
        "kernel_provider": "liger",
        "kernel_operation_mode": "full",
        "metric_name": "speed",
        "x_name": "T",
        "x_value": "1024",
        "extra_benchmark_config_str": "{}",
    }
    spool = tmp_path / "s.samples.jsonl"
    _spool(
        spool,
        [
            {"case": case, "returned": [1.5, 1.0, 2.0], "samples": [1.0, 1.5, 2.0]},
            {"case": None, "returned": [3.5, 3.0, 4.0], "samples": [3.0, 3.5, 4.0]},  # a script's own loop
            {"case": None, "returned": [5.0, 5.0, 5.0], "samples": [5.0]},  # two rows share these values
            {"case": {**case, "x_value": "4096"}, "returned": [9.0, 9.0, 9.0], "samples": [9.0]},
        ],
    )
    rows = [
        _row("liger", 1024, (1.5, 1.0, 2.0)),
        _row("huggingface", 1024, (3.5, 3.0, 4.0)),
        _row("liger", 2048, (5.0, 5.0, 5.0)),
        _row("huggingface", 2048, (5.0, 5.0, 5.0)),
        _row("liger", 4096, (8.0, 8.0, 8.0)),  # its call returned other values: derived, not paired
        _row("liger", 1024, (7.0, 7.0, 7.0), metric="memory"),
    ]
    collected = _collect(spool, tmp_path, rows)
    assert collected.unreadable_lines == 1  # the line cut short by a kill
    assert collected.rows_without_samples == {"ambiguous": 2, "memory": 1, "values_differ_from_the_call": 1}
    assert sorted(collected.by_row) == sorted(
        row_key("k", p, "full", "speed", "T", "1024", "{}", "G") for p in ("liger", "huggingface")
    )
    for entry in collected.by_row.values():
        path = tmp_path / "samples" / (entry["artifact"]["digest"].removeprefix("sha256:") + ".json")
        assert entry["artifact"]["uri"] == path.resolve().as_uri()
        data = path.read_bytes()
        assert entry["artifact"]["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
        artifact = json.loads(data)
        assert artifact["unit"] == "ms" and artifact["script"] == "benchmark_k.py"
        assert {k: entry[k] for k in ("samples", "latencyNs")} == latency_statistics(artifact["samples"])
    paired, _ = pair_rows(rows, read_spool(spool)[0])
    assert paired[row_key("k", "liger", "full", "speed", "T", "1024", "{}", "G")].call == 1


def test_a_call_with_impossible_timings_gives_its_row_no_statistics(tmp_path):
    spool = tmp_path / "s.samples.jsonl"
    spool.write_text('{"call": 1, "case": null, "returned": [1.0, 1.0, 1.0], "samples": [1.0, Infinity]}\n')
    collected = _collect(spool, tmp_path, [_row("liger", 1, (1.0, 1.0, 1.0))])
    assert collected.by_row == {} and collected.rows_without_samples == {"invalid_samples": 1}
    assert len(list((tmp_path / "samples").glob("*.json"))) == 1  # the evidence is kept all the same


# --- issue 22: extreme samples, a bounded spool, artifacts never written through links ----------------
@pytest.mark.parametrize("extreme", [1e308, 1e300])
def test_an_extreme_sample_costs_its_own_row_its_statistics_and_nothing_else(tmp_path, extreme):
    spool = tmp_path / "s.samples.jsonl"
    _spool(
        spool,
        [
            {"case": None, "returned": [1.0, 1.0, 1.0], "samples": [1.0, extreme]},
            {"case": None, "returned": [2.0, 2.0, 2.0], "samples": [2.0, 2.0]},
        ],
    )
    collected = _collect(spool, tmp_path, [_row("liger", 1, (1.0, 1.0, 1.0)), _row("liger", 2, (2.0, 2.0, 2.0))])
    assert collected.rows_without_samples == {"invalid_samples": 1}
    assert list(collected.by_row) == [row_key("k", "liger", "full", "speed", "T", "2", "{}", "G")]
    (problem,) = collected.problems
    assert problem["kind"] == "samples" and '"1"' in problem["message"] and f"{extreme!r} ms" in problem["message"]
    with pytest.raises(ValueError, match="beyond 9007199254740991 ns"):
        latency_statistics([1.0, extreme])


def test_the_spool_is_read_within_its_bounds(tmp_path, monkeypatch):
    from kernelindex_pipeline.sweep import samples as samples_module

    monkeypatch.setattr(samples_module, "MAX_SPOOL_LINE_BYTES", 200)
    monkeypatch.setattr(samples_module, "SPOOL_READ_LIMIT_BYTES", 2000)
    line = json.dumps({"call": 1, "case": None, "returned": [1.0, 1.0, 1.0], "samples": [1.0]}) + "\n"
    spool = tmp_path / "s.samples.jsonl"
    spool.write_text(line + json.dumps({"call": 2, "samples": [1.0] * 60}) + "\n" + line * 1000)
    with spool.open("rb") as handle, ArtifactDirectory(tmp_path / "samples") as artifacts:
        read, problems = samples_module.collect_calls(handle, artifacts, "benchmark_k.py")
        assert handle.tell() < 4000  # it stopped reading: the rest was never held
    assert read.unreadable_lines == 1  # the line over the per-call bound
    assert 1 < len(read.calls) < 40 and read.cut == "more than 2000 bytes; the rest was not read"
    assert problems == ["its samples spool held more than 2000 bytes; the rest was not read"]
    # Each call's samples went to its artifact; none are held past their own line.
    assert all(call.samples is None and "samples" not in call.record and call.sample_count == 1 for call in read.calls)


def test_artifacts_replace_planted_links_and_their_directory_is_read_only(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    data = b'{"samples":[1.0]}'
    name = hashlib.sha256(data).hexdigest() + ".json"
    with ArtifactDirectory(tmp_path / "logs" / "samples", tmp_path / "quarantine") as artifacts:
        directory = tmp_path / "logs" / "samples"
        os.chmod(directory, 0o700)
        os.symlink(outside, directory / name)  # where the next artifact will go
        os.chmod(directory, 0o500)
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o500  # read-only between the runner's writes
        reference = artifacts.write(data)
        assert outside.read_text() == "precious"  # replaced, never written through
        assert not (directory / name).is_symlink() and (directory / name).read_bytes() == data
        assert verify_artifact(reference) is None
        # The directory swapped for a link to elsewhere: the runner makes a fresh one and says so.
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        os.rename(directory, tmp_path / "logs" / "moved")
        os.symlink(elsewhere, directory)
        second = artifacts.write(b'{"samples":[2.0]}')
        assert os.listdir(elsewhere) == [] and directory.is_dir() and not directory.is_symlink()
        assert [p["message"] for p in artifacts.take_problems()] == [
            f"the samples directory {directory} was moved or replaced; a fresh one was made"
        ]
        assert verify_artifact(second) is None
        assert "cannot be opened" in verify_artifact(reference)  # it went with the moved directory
    os.chmod(tmp_path / "logs" / "moved", 0o700)


def test_an_artifact_changed_after_its_digest_was_taken_is_found(tmp_path):
    with ArtifactDirectory(tmp_path / "samples") as artifacts:
        reference = artifacts.write(b'{"samples":[1.0]}')
    path = tmp_path / "samples" / (reference["digest"].removeprefix("sha256:") + ".json")
    os.chmod(path, 0o600)
    path.write_bytes(b'{"samples":[9.0]}')
    assert (
        verify_artifact(reference)
        == f"{path} was changed after it was written (its sha256 is no longer {reference['digest']})"
    )
    path.unlink()
    os.symlink(tmp_path / "elsewhere.json", path)
    assert verify_artifact(reference) == f"{path} is reached through a symbolic link"


def test_the_hook_writes_only_into_the_runners_unnamed_spool(tmp_path):
    """A process that got the variable but another descriptor under that number (a named file) is left
    alone: the hook stays off and writes nothing into that file."""
    fake = build_fake_torch(tmp_path / "torch", "NVIDIA H200", triton="summarize")
    named = tmp_path / "named.txt"
    with named.open("ab") as handle:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELINDEX_")}
        env["PYTHONPATH"] = os.pathsep.join([str(HOOK_DIR), str(fake)])
        env.update(hook_environment(handle.fileno()))
        completed = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys, triton.testing as t; print(getattr(t.do_bench, '__kernelindex_wrapped__', False))",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            pass_fds=(handle.fileno(),),
        )
    assert completed.stdout.split() == ["False"], completed.stderr
    assert named.read_bytes() == b""
