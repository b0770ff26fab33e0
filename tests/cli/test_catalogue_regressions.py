"""`regressions --judgement-store FILE`: a repeated detection reuses the stored judgements and says so; without
the option every series is judged (nothing is written)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kernelindex_pipeline.cli import main
from tests.detection.test_detect import panel


def _sweep_files(tmp_path) -> list[str]:
    """Ten weekly sweeps of 24 series (one records file each, one source run each), one series 30 % slower
    from the seventh on."""
    rng = np.random.default_rng(3)
    levels = 200_000 * np.exp(rng.normal(0, 0.02, size=(24, 10)))
    levels[5, 6:] *= 1.3
    by_sweep: dict[str, list[dict]] = {}
    for manifest in panel(levels):
        by_sweep.setdefault(manifest["spec"]["observedAt"][:10], []).append(manifest)
    paths = []
    for day, runs in sorted(by_sweep.items()):
        path = tmp_path / f"{day}.jsonl"
        path.write_text("".join(json.dumps(m) + "\n" for m in runs), encoding="utf-8")
        paths.append(str(path))
    return paths


def test_a_second_detection_with_the_store_judges_nothing_again(tmp_path, capsys):
    files, store = _sweep_files(tmp_path), tmp_path / "judgements.json"
    command = ["regressions", "--records", *files, "--judgement-store", str(store)]
    assert main([*command, "--out", str(tmp_path / "first")]) == 0
    assert f"detection: 24 series judged afresh, 0 reused (judgement store {store})" in capsys.readouterr().out
    assert main([*command, "--out", str(tmp_path / "second")]) == 0
    assert "detection: 0 series judged afresh, 24 reused" in capsys.readouterr().out
    first, second = (json.loads((tmp_path / d / "regressions.json").read_text()) for d in ("first", "second"))
    assert first == second and first["counts"]["slowdowns"] == 1


def test_a_damaged_store_is_a_note_on_stderr(tmp_path, capsys):
    files, store = _sweep_files(tmp_path), tmp_path / "judgements.json"
    store.write_text("{half a file", encoding="utf-8")
    assert main(["regressions", "--records", *files, "--judgement-store", str(store), "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr()
    assert (
        "24 series judged afresh" in printed.out
        and f"note: judgement store {store}: not a judgement store" in printed.err
    )
    assert store.read_text(encoding="utf-8") == "{half a file"  # not ours: left as it is


def test_a_records_file_given_as_the_store_is_left_as_it_is(tmp_path, capsys):
    """Issue 31 item 2: `--judgement-store b/records.jsonl` replaced the records file with 730 bytes of
    judgements. It is read as records and left whole; one line says why nothing was stored."""
    files = _sweep_files(tmp_path)
    records = Path(files[0])
    before = records.read_bytes()
    assert main(["regressions", "--records", *files, "--judgement-store", str(records), "--out", str(tmp_path)]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "judgement store" in line]
    assert notes == [
        f"note: judgement store {records}: not a judgement store (it does not begin with "
        '{"format": "kernelindex-pipeline/series-judgements"); it is left as it is, every series is judged afresh '
        "and nothing is stored (choose another path, or delete the file)"
    ]
    assert records.read_bytes() == before


def test_without_a_store_nothing_is_kept(tmp_path, capsys):
    files = _sweep_files(tmp_path)
    assert main(["regressions", "--records", *files, "--out", str(tmp_path / "out")]) == 0
    assert "detection: 24 series judged afresh, 0 reused (no judgement store)" in capsys.readouterr().out
    assert not [p for p in tmp_path.rglob("*") if "judgement" in p.name]


def test_bisection_files_are_keyed_by_their_group_and_other_json_is_refused(tmp_path):
    from kernelindex_pipeline.cli.catalogue import _bisections
    from kernelindex_pipeline.cli.errors import CommandError

    first, later, other = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    first.write_text(json.dumps({"plan": {"group": "g-1"}, "verdict": "ambiguous"}))
    later.write_text(json.dumps({"plan": {"group": "g-1"}, "verdict": "confirmed"}))
    other.write_text(json.dumps({"series": 3}))
    assert _bisections([first, later]) == {"g-1": {"plan": {"group": "g-1"}, "verdict": "confirmed"}}
    with pytest.raises(CommandError, match="its plan names no group"):
        _bisections([other])
