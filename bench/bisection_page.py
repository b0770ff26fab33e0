"""A bisection's JSON and its place on the regressions page, made on this CPU host (issue 27's note).

Builds the synthetic Liger repository of the CPU tests (tests/support/liger_bisection.py: rms_norm slower
from commit c6 on, c4 failing to import), bisects a group over c0..c8 with `kernelindex-pipeline bisect`
(real sweeps in real subprocesses, stand-in torch/triton timing the op: no GPU), then attaches the verdict
to the first group of a detected report and writes the regressions page and JSON with it. A stand-in
measurement, never a GPU result: the values are the stand-in clock's.

    .venv/bin/python bench/bisection_page.py OUT_DIR

OUT_DIR receives verdict.json (what `bisect --out` wrote; its paths are of a removed temporary folder),
regressions.json, and regressions.html with its stylesheet (its charts' scripts are left out).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.support: the synthetic repository and host the CPU tests use

from kernelindex_pipeline.detection.document import regressions_json  # noqa: E402
from kernelindex_pipeline.reporting.regressions_page import write_regressions  # noqa: E402
from tests.reporting.test_regressions_page import stepped_report  # noqa: E402
from tests.support.liger_bisection import build_host, build_repository, report_of  # noqa: E402

GROUP = "g-0123456789ab"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        repo = build_repository(root, commits=8, slow_from=6, broken=frozenset({4}))
        host = build_host(root / "host")
        (root / "wheels").mkdir()
        report = root / "regressions.json"
        report.write_text(
            json.dumps(report_of(repo.commits, before_ref=repo.commits[0][:7], after_ref=repo.commits[8][:7]))
        )
        verdict = args.out / "verdict.json"
        command = [
            sys.executable, "-m", "kernelindex_pipeline.cli", "bisect", "--regressions", str(report), "--group", GROUP,
            "--out", str(verdict), "--liger-git", str(repo.path), "--pythonpath", str(host["torch"]), "--rounds", "2",
            "--env-cache", str(root / "envs"), "--build-cache", str(root / "builds"), "--wheel-dir", str(root / "wheels"),
            "--work-dir", str(root / "steps"),
        ]  # fmt: skip
        done = subprocess.run(command, env={**os.environ, "PATH": host["path"]}, text=True, capture_output=True)
        print(done.stdout, end="")
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
            return done.returncode
    document = json.loads(verdict.read_text("utf-8"))
    detected = stepped_report()
    group_id = regressions_json(detected)["groups"][0]["id"]
    document["plan"]["group"] = group_id  # the detected group stands for the one bisected
    with tempfile.TemporaryDirectory() as site:  # the page's scripts and vendored charts are the site's, not kept
        paths = write_regressions(dataclasses.replace(detected, bisections={group_id: document}), Path(site))
        for path in (paths.json, paths.page, Path(site) / "site.css"):
            shutil.copyfile(path, args.out / path.name)
    print(f"wrote {verdict}, regressions.json, regressions.html and site.css in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
