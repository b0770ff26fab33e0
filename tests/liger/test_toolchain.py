"""The toolchain timeline file (data/toolchain-timeline.yaml) as input: checked on load, a damaged file is
one line naming the file and the entry (issue 31 item 13)."""

from __future__ import annotations

import types
from importlib import resources

import pytest

from kernelindex_pipeline.liger import toolchain

SHIPPED = resources.files("kernelindex_pipeline.data").joinpath(toolchain.TIMELINE_FILE).read_text("utf-8")
TORCH_101 = "  - version: 1.0.1\n    released: '2019-02-05T00:38:13Z'\n"  # the second torch entry
REBUILD = "; rebuild it: bash scripts/refresh_toolchain_timeline"


def _damaged(old: str, new: str) -> str:
    assert SHIPPED.count(old) == 1
    return SHIPPED.replace(old, new)


DAMAGES = {
    "a month 13": (
        _damaged(TORCH_101, TORCH_101.replace("2019-02-05", "2019-13-05")),
        "packages.torch[1] (torch 1.0.1): released: '2019-13-05T00:38:13Z' is not an ISO 8601 time: month must be in 1..12",
    ),
    "not a time": (
        _damaged(TORCH_101, TORCH_101.replace("'2019-02-05T00:38:13Z'", "soon")),
        "packages.torch[1] (torch 1.0.1): released: 'soon' is not an ISO 8601 time: Invalid isoformat string: 'soon'",
    ),
    "a time without its zone": (
        _damaged(TORCH_101, TORCH_101.replace("00:38:13Z", "00:38:13")),
        "packages.torch[1] (torch 1.0.1): released: '2019-02-05T00:38:13' is not an ISO 8601 time: "
        "'2019-02-05T00:38:13' has no UTC offset (write it as YYYY-MM-DDTHH:MM:SSZ)",
    ),
    "Invalid version: 'banana'": (
        _damaged(TORCH_101, TORCH_101.replace("1.0.1", "banana")),
        "packages.torch[1] (torch banana): version: 'banana' is not a version (PEP 440)",
    ),
    "a version YAML reads as a number": (
        _damaged(TORCH_101, TORCH_101.replace("1.0.1", "2.10")),  # unquoted: the float 2.1
        "packages.torch[1]: version: Input should be a valid string",
    ),
    "a time of the wrong type": (
        _damaged(TORCH_101, TORCH_101.replace("'2019-02-05T00:38:13Z'", "20190205")),
        "packages.torch[1] (torch 1.0.1): released: Input should be a valid string",
    ),
    "an entry that is not a mapping": (
        _damaged(TORCH_101, "  - 1.0.1\n"),
        "packages.torch[1]: Input should be a valid dictionary or instance of _Release",
    ),
    "packages as a list": (
        _damaged("packages:\n  torch:\n", "packages:\n- torch:\n"),
        "packages: Input should be a valid dictionary",
    ),
    "missing key 'released'": (
        _damaged(TORCH_101, "  - version: 1.0.1\n"),
        "packages.torch[1] (torch 1.0.1): no `released`",
    ),
    "a misspelt key": (
        _damaged(TORCH_101, TORCH_101.replace("released:", "relased:")),
        "packages.torch[1] (torch 1.0.1): no `released` (and 1 more problem)",
    ),
    "a version listed twice": (
        _damaged(TORCH_101, TORCH_101.replace("1.0.1", "1.0.0")),
        "packages.torch[1] (torch 1.0.0): listed twice",
    ),
    "no packages": ("refreshed: '2026-12-01T17:20:21Z'\n", "the timeline: no `packages`"),
    "a key of its own": (SHIPPED + "notes: hand-edited\n", "the timeline: `notes` is not a key of the timeline"),
    "an empty file": ("", "not a timeline (a YAML mapping with `packages`)"),
    "not YAML": (
        SHIPPED + "packages: [\n",
        "not YAML (expected the node content, but found '<stream end>' at line 596, column 1)",
    ),
}


@pytest.fixture
def shipped_file(tmp_path, monkeypatch):
    """Where packaged_timeline reads the package data from, made a file of this test's."""
    path = tmp_path / toolchain.TIMELINE_FILE
    monkeypatch.setattr(toolchain, "resources", types.SimpleNamespace(files=lambda package: tmp_path))
    return path


def test_the_shipped_timeline_loads():
    timeline = toolchain.packaged_timeline()
    assert timeline.packages == ("torch", "transformers") and timeline.newest_at("torch", 1.6e9)[0] == "1.6.0"


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_timeline_is_one_line_naming_the_file_and_the_entry(damage, shipped_file):
    text, problem = DAMAGES[damage]
    shipped_file.write_text(text)
    with pytest.raises(ValueError) as raised:  # at load: not later, deep in a detection
        toolchain.packaged_timeline()
    assert str(raised.value) == f"{shipped_file}: {problem}{REBUILD}"
