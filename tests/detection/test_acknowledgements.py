"""A group's acknowledgement is the mark all its changes share: each change's mark names that change, so a group of
many changes marked by one `acknowledge` is acknowledged (it read as unmarked: the set of its marks had one per
change), and a group whose marks differ, or with an unmarked change, is not."""

from __future__ import annotations

from kernelindex_pipeline.detection.acknowledgements import Acknowledgement, shared_mark


def _mark(change: str, **given) -> Acknowledgement:
    fields = {"status": "expected", "note": "known", "by": "maintainer", "at": "2026-12-04T17:00:00Z", **given}
    return Acknowledgement(change, **fields)


def test_a_group_of_many_changes_marked_at_once_is_acknowledged():
    marks = [_mark(f"chg-{i}") for i in range(67)]
    assert shared_mark(marks) == marks[0]


def test_a_group_with_an_unmarked_or_differently_marked_change_is_not():
    assert shared_mark([_mark("chg-1"), None]) is None
    assert shared_mark([_mark("chg-1"), _mark("chg-2", note="other")]) is None
    assert shared_mark([_mark("chg-1"), _mark("chg-2", status="fixed", fixed_in="abc1234")]) is None
    assert shared_mark([]) is None
