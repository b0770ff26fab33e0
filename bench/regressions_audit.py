"""Regression detection scored against a labelled audit of Liger's real CI runs (issue 26).

    # score the detector of this checkout (transform + `regressions --liger-git`, as a user runs them):
    .venv/bin/python bench/regressions_audit.py score --ci ../shared/data/liger-ci --liger-git CLONE
    # score a report another checkout wrote (the figures before a change):
    .venv/bin/python bench/regressions_audit.py score --report OLD/regressions.json
    # the evidence to label what the audit does not hold yet (appended, verdict empty):
    .venv/bin/python bench/regressions_audit.py draft --ci ../shared/data/liger-ci --liger-git CLONE

CLONE is a clone of Liger-Kernel (``git clone --bare https://github.com/linkedin/Liger-Kernel CLONE``).
The audit (`bench/audit/liger-ci-eleven.yaml`) labels each change a detector has reported on the eleven
files: ``real`` or ``noise``, the true cause of a real one and the commit(s) that made it, with the reason
and the evidence it was judged from. It is the population a detector is scored on: a change it no
longer reports counts against recall when it was real, and a change the audit lacks is listed as
unlabelled (label it: ``draft``). The figures, as issue 26 defines them:

- precision: real / reported; groups (boundary, cause, as the page groups them) that hold only noise;
- recall: real changes reported / real changes in the audit, and the share of series with a real change
  that have a change reported (at any boundary);
- cause right: a real change's cause is its true cause; commit named: for kernel and script changes, a
  true commit is among the suspects of that cause;
- same-code pairs: changes between two runs of one commit, per judged series.

Labels are facts about Liger's history and values, never about a detector's settings: the thresholds of
detection are not tuned to them (the issue's targets are measured on more runs than these).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
AUDIT = HERE / "audit" / "liger-ci-eleven.yaml"
CLI = Path(sys.executable).with_name("kernelindex-pipeline")
CAUSES = ("liger_kernel", "benchmark_script", "environment", "host")


def change_key(change: dict) -> str:
    """One change: its series and its boundary (``gpu kernel/mode/provider/case/metric before->after``)."""
    return (
        f"{change['gpu']} {change['kernel']}/{change['mode']}/{change['provider']}/{change['caseKey']}/"
        f"{change['metric']} {change['before']['source']}->{change['after']['source']}"
    )


def detect(ci: Path, clone: str | None, out: Path) -> dict:
    """`transform` each CSV of `ci`, then `regressions` over them: the report a user gets."""
    records = []
    for csv in sorted(ci.glob("*.csv")):
        target = out / csv.stem
        subprocess.run([str(CLI), "transform", str(csv), "--out", str(target)], check=True, capture_output=True)
        records.append(str(target / "records.jsonl"))
    command = [str(CLI), "regressions", "--records", *records, "--out", str(out / "report")]
    if clone:
        command += ["--liger-git", clone]
    subprocess.run(command, check=True, capture_output=True)
    return json.loads((out / "report" / "regressions.json").read_text())


def load_audit(path: Path) -> dict[str, dict]:
    """Each labelled change by its key, with its group's verdict, cause and commits where it has none."""
    document = yaml.safe_load(path.read_text()) if path.exists() else None
    labelled: dict[str, dict] = {}
    for group in (document or {}).get("groups") or []:
        for change in group["changes"]:
            label = {k: group.get(k) for k in ("verdict", "cause", "commits")}
            label.update({k: v for k, v in change.items() if k in ("verdict", "cause", "commits")})
            label["group"] = group["title"]
            labelled[change["key"]] = label
    return labelled


def score(report: dict, labelled: dict[str, dict]) -> dict:
    """The figures of the module docstring for one report."""
    changes = report["changes"]
    keys = [change_key(c) for c in changes]
    reported = {k: c for k, c in zip(keys, changes, strict=True)}
    unlabelled = [k for k in keys if k not in labelled or labelled[k]["verdict"] not in ("real", "noise")]
    real = [k for k in keys if k in labelled and labelled[k]["verdict"] == "real"]
    noise = [k for k in keys if k in labelled and labelled[k]["verdict"] == "noise"]
    by_group: dict[tuple, Counter] = defaultdict(Counter)
    for key, change in reported.items():
        group = (change["before"]["source"], change["after"]["source"], change["cause"])
        by_group[group][labelled.get(key, {}).get("verdict") or "unlabelled"] += 1
    cause_right = [k for k in real if reported[k]["cause"] == labelled[k]["cause"]]
    named, named_right = [], []
    for key in real:
        if labelled[key]["cause"] not in ("liger_kernel", "benchmark_script"):
            continue
        named.append(key)
        true = tuple(labelled[key]["commits"] or ())
        suspects = {
            commit["sha"]
            for cause in reported[key]["causes"]
            if cause["cause"] == labelled[key]["cause"]
            for commit in cause.get("commits") or ()
        }
        if any(s.startswith(t) for s in suspects for t in true):
            named_right.append(key)
    audit_real = [k for k, v in labelled.items() if v["verdict"] == "real"]
    missed = [k for k in audit_real if k not in reported]
    series_of = lambda key: key.rsplit(" ", 1)[0]  # noqa: E731 - the key without its boundary
    real_series = {series_of(k) for k in audit_real}
    series_found = real_series & {series_of(k) for k in reported}
    code = {s["source"]: s.get("codeRef") for s in report["sources"]}
    same_code = [
        k
        for k, c in reported.items()
        if code.get(c["before"]["source"]) and code.get(c["before"]["source"]) == code.get(c["after"]["source"])
    ]
    return {
        "reported": len(keys),
        "real": len(real),
        "noise": len(noise),
        "unlabelled": unlabelled,
        "precision": len(real) / max(1, len(real) + len(noise)),
        "groups": len(by_group),
        "groups_only_noise": sorted(" ".join(g) for g, v in by_group.items() if set(v) == {"noise"}),
        "groups_mixed": sorted(" ".join(g) for g, v in by_group.items() if v["real"] and v["noise"]),
        "recall": (len(audit_real) - len(missed)) / max(1, len(audit_real)),
        "missed": missed,
        "series_recall": len(series_found) / max(1, len(real_series)),
        "cause_right": len(cause_right) / max(1, len(real)),
        "cause_wrong": sorted(set(real) - set(cause_right)),
        "commit_named": len(named_right) / max(1, len(named)),
        "commit_missing": sorted(set(named) - set(named_right)),
        "same_code_changes": len(same_code),
        "same_code_share": len(same_code) / max(1, report["series"]),
        "host_changes": len(report.get("hostChanges") or ()),
        "by_cause": report["counts"]["byCause"],
    }


def print_score(figures: dict) -> None:
    print(
        f"reported {figures['reported']} changes: {figures['real']} real, {figures['noise']} noise, "
        f"{len(figures['unlabelled'])} unlabelled; precision {figures['precision']:.1%}"
    )
    print(
        f"groups {figures['groups']}: {len(figures['groups_only_noise'])} only noise, "
        f"{len(figures['groups_mixed'])} mixed"
    )
    for title in figures["groups_only_noise"]:
        print(f"  only noise: {title}")
    for title in figures["groups_mixed"]:
        print(f"  mixed: {title}")
    print(
        f"recall {figures['recall']:.1%} of the audit's real changes ({len(figures['missed'])} missed); "
        f"{figures['series_recall']:.1%} of the series with a real change have one reported"
    )
    print(
        f"cause right {figures['cause_right']:.1%} of real changes; true commit among the suspects "
        f"{figures['commit_named']:.1%} of kernel and script changes"
    )
    print(
        f"same-code changes {figures['same_code_changes']} ({figures['same_code_share']:.2%} of judged series); "
        f"host changes {figures['host_changes']}"
    )
    print(f"by cause {figures['by_cause']}")
    for name in ("unlabelled", "missed", "cause_wrong", "commit_missing"):
        for key in figures[name][:20]:
            print(f"  {name}: {key}")


def draft(report: dict, labelled: dict[str, dict], clone: str | None, path: Path, ci: Path) -> int:
    """Append the changes the audit lacks as groups to label (verdict empty), with their evidence."""
    fresh = [c for c in report["changes"] if change_key(c) not in labelled]
    if not fresh:
        print("every reported change is labelled")
        return 0
    document = yaml.safe_load(path.read_text()) if path.exists() else {"groups": []}
    document["groups"] += evidence_groups(fresh, ci, clone)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False, width=120, allow_unicode=True))
    print(f"{len(fresh)} changes to label appended to {path}")
    return 0


def evidence_groups(fresh: list[dict], ci: Path, clone: str | None) -> list[dict]:
    """The changes to label, grouped as the page groups them (boundary, cause, first suspects), each with
    its raw values per run (over the series' median) and, per boundary, both runs' checkouts and the
    commits of the code window that touch Liger's code or benchmarks. In-process: needs the package."""
    from kernelindex_pipeline.detection.detect import detect_in_record_files
    from kernelindex_pipeline.liger.attribution import LigerAttribution, LigerAttributor

    with tempfile.TemporaryDirectory() as scratch:
        records = []
        for csv in sorted(ci.glob("*.csv")):
            target = Path(scratch) / csv.stem
            subprocess.run([str(CLI), "transform", str(csv), "--out", str(target)], check=True, capture_output=True)
            records.append(target / "records.jsonl")
        liger = LigerAttribution(clone)
        report = detect_in_record_files(records, None, liger.adapters)
    trends = {}
    for change in report.changes:
        trend = change.trend
        trends[
            (trend.key.gpu, trend.key.kernel, trend.key.mode, trend.key.provider, trend.case_key, trend.key.metric)
        ] = trend
    attributor = LigerAttributor(liger.history, None) if liger.history is not None else None
    by_label = {s.label: s for s in report.sources}
    groups: dict[tuple, dict] = {}
    for change in fresh:
        first = change["causes"][0] if change.get("causes") else {}
        suspects = tuple(c["sha"][:8] for c in first.get("commits") or ())
        boundary = (change["before"]["source"], change["after"]["source"])
        title = f"{boundary[0]} -> {boundary[1]} {change['cause']} {' '.join(suspects)}".strip()
        if title not in groups:
            groups[title] = {
                "title": title,
                "verdict": None,
                "cause": None,
                "commits": [],
                "reason": None,
                "harness": {s: _checkout_text(attributor, by_label.get(s)) for s in boundary},
                "code_window": _window_text(attributor, by_label.get(boundary[0]), by_label.get(boundary[1])),
                "changes": [],
            }
        key = (change["gpu"], change["kernel"], change["mode"], change["provider"], change["caseKey"], change["metric"])
        trend = trends.get(key)
        values = ""
        if trend is not None:
            middle = float(sorted(trend.values)[len(trend.values) // 2])
            values = " ".join(f"{src[:7]}:{v / middle:.2f}" for src, v in zip(trend.sources, trend.values, strict=True))
        groups[title]["changes"].append({"key": change_key(change), "magnitude": change["magnitude"], "values": values})
    return list(groups.values())


def _checkout_text(attributor, source) -> str:
    if attributor is None or source is None:
        return "unknown (no clone)"
    checkout = attributor.checkout(source)
    if checkout is None:
        return "unknown (commit not in the clone)"
    if not checkout.mixed:
        return f"{checkout.code[:8]} (measured at {source.observed_at}; its own commit throughout)"
    return (
        f"{checkout.code[:8]} with {', '.join(checkout.replaced)} from {checkout.harness[:8]} "
        f"(the default branch at {source.observed_at})"
    )


def _window_text(attributor, before, after) -> list[str]:
    if attributor is None or before is None or after is None:
        return []
    a, b = attributor.checkout(before), attributor.checkout(after)
    if a is None or b is None:
        return []
    history = attributor.history
    out = []
    for commit in history.commits_between(a.code, b.code) + history.commits_between(b.code, a.code):
        touched = [f for f in commit.files if f.startswith(("src/", "benchmark/", "setup.py", "pyproject"))]
        if touched:
            shown = ", ".join(touched[:4]) + (f" +{len(touched) - 4}" if len(touched) > 4 else "")
            out.append(f"{commit.sha[:8]} {commit.subject[:90]} [{shown}]")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("score", "draft"))
    parser.add_argument("--ci", type=Path, help="folder of Liger CI benchmark.csv files (<dir>.csv)")
    parser.add_argument("--liger-git", help="a clone of Liger-Kernel, for attribution")
    parser.add_argument("--report", type=Path, help="a regressions.json to score instead of detecting")
    parser.add_argument("--audit", type=Path, default=AUDIT)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.report is None and args.ci is None:
        parser.error("give --ci (and --liger-git) or --report")
    labelled = load_audit(args.audit)
    if args.report is not None:
        report = json.loads(args.report.read_text())
    else:
        with tempfile.TemporaryDirectory() as scratch:
            report = detect(args.ci, args.liger_git, Path(scratch))
    if args.mode == "draft":
        if args.ci is None:
            parser.error("draft needs --ci (the raw values)")
        return draft(report, labelled, args.liger_git, args.audit, args.ci)
    figures = score(report, labelled)
    if args.json:
        print(json.dumps(figures, indent=1))
    else:
        print_score(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
