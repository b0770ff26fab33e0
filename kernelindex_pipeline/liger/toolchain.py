"""The toolchain Liger's benchmark workflow installs, over time: release dates of torch and transformers.

Liger's CI image installs ``liger_kernel[dev]`` with ``uv pip install`` and pins none of torch, triton or
transformers (``torch>=2.1.2`` in setup.py), so a run gets whatever is newest on the package index that
day, and its CSV records no versions. For such a source the toolchain difference between two runs is
the set of unpinned packages with a release between them: the newest final release at each run's time.

The timeline is a versioned file in the project (``data/toolchain-timeline.yaml``) so results do not
depend on the network; `refresh` rebuilds it from PyPI's JSON API
(``scripts/refresh_toolchain_timeline``). This module writes the file and parses it back, checking it
against a schema on load (`_TimelineFile`): every detection reads it, so a damaged file is one
ToolchainTimelineError naming the file and the entry, never an error from deep inside attribution.
"""

from __future__ import annotations

import ast
import bisect
import json
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

TIMELINE_FILE = "toolchain-timeline.yaml"
# What the benchmark image installs unpinned and what moves a benchmark's numbers: torch (eager
# baselines, torch.compile, and the triton that runs Liger's kernels) and transformers (the Hugging Face
# baselines). triton is not tracked on its own: setup.py asks for triton>=2.3.1, but each torch release
# pins its triton exactly (torch 2.7.1: triton==3.3.1), so triton moves when torch does, and its own
# newest release is often not what was installed. Other dev tools (pytest, ruff, ...) time nothing.
TRACKED_PACKAGES = ("torch", "transformers")
PYPI_JSON = "https://pypi.org/pypi/{name}/json"
MAX_RESPONSE_BYTES = 64 * 1024 * 1024  # torch's JSON document is ~20 MB
REFRESH_DEADLINE_S = 300.0  # the whole refresh, every package: torch's document takes a few seconds
MAX_FILE_BYTES = 4 * 1024 * 1024  # the packaged file is ~20 KB for two packages
REBUILD = "rebuild it: bash scripts/refresh_toolchain_timeline"


class ToolchainTimelineError(ValueError):
    """The toolchain timeline file is damaged; the message (one line) names the file and the entry."""


def _utc_epoch(stamp: str) -> float:
    """Seconds since the epoch of an ISO 8601 time with its offset (`Z` or `+hh:mm`): a time without one
    would be read in the local zone of whoever runs the detection."""
    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError(f"{stamp!r} has no UTC offset (write it as YYYY-MM-DDTHH:MM:SSZ)")
    return moment.timestamp()


class _Release(BaseModel):
    # strict: an unquoted `version: 2.10` is the float 2.1 to YAML, so only strings are versions
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    version: str
    released: str

    @field_validator("version")
    @classmethod
    def _a_version(cls, value: str) -> str:
        try:
            Version(value)
        except InvalidVersion:
            raise ValueError(f"{value!r} is not a version (PEP 440)") from None
        return value

    @field_validator("released")
    @classmethod
    def _a_time(cls, value: str) -> str:
        return _iso_time(value)


def _iso_time(value: str) -> str:
    """`value`, checked to be an ISO 8601 time with an offset (pydantic validators' shared rule)."""
    try:
        _utc_epoch(value)
    except ValueError as error:
        raise ValueError(f"{value!r} is not an ISO 8601 time: {error}") from None
    return value


class _TimelineFile(BaseModel):
    """The file as `ToolchainTimeline.to_yaml` writes it."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    refreshed: str = ""
    source: str = ""
    refresh: str = ""
    packages: dict[str, list[_Release]]


def _where(data: Any, loc: tuple[Any, ...]) -> tuple[str, str]:
    """(`packages.torch[3] (torch 2.5.1)`, `released`): the entry a pydantic location falls in, named by
    its version where it has one, and the key in it (empty for the entry itself)."""
    last_index = max((i for i, step in enumerate(loc) if isinstance(step, int)), default=len(loc) - 1)
    entry, key = loc[: last_index + 1], loc[last_index + 1 :]
    where, node = "", data
    for step in entry:
        where += f"[{step}]" if isinstance(step, int) else (f".{step}" if where else str(step))
        found = (step in node) if isinstance(node, dict) else isinstance(node, list) and 0 <= step < len(node)
        node = node[step] if found else None
    if isinstance(node, dict) and isinstance(node.get("version"), str) and len(entry) == 3:
        where += f" ({entry[1]} {node['version']})"
    return where, ".".join(str(step) for step in key)


@dataclass(frozen=True)
class ToolchainStep:
    package: str
    before: str | None  # newest final release at the earlier run
    after: str  # newest final release at the later run
    released: str  # date of `after`

    def to_dict(self) -> dict[str, Any]:
        return {"package": self.package, "before": self.before, "after": self.after, "released": self.released}

    def text(self) -> str:
        return f"{self.package} {self.before or '—'} → {self.after} ({self.released[:10]})"


class ToolchainTimeline:
    """Final releases per package, with the time each appeared on the package index."""

    def __init__(self, releases: dict[str, list[tuple[str, str]]], refreshed: str = "") -> None:
        self.refreshed = refreshed
        self._releases = {name: sorted(items, key=lambda item: item[1]) for name, items in releases.items()}
        self._times = {name: [_utc_epoch(date) for _, date in items] for name, items in self._releases.items()}

    @property
    def packages(self) -> tuple[str, ...]:
        return tuple(self._releases)

    def newest_at(self, package: str, epoch: float) -> tuple[str, str] | None:
        """The highest final version released at or before `epoch` (what an unpinned install got)."""
        items, times = self._releases.get(package, []), self._times.get(package, [])
        known = items[: bisect.bisect_right(times, epoch)]
        return max(known, key=lambda item: Version(item[0])) if known else None

    def difference(
        self, before_epoch: float, after_epoch: float, packages: tuple[str, ...] | None = None
    ) -> list[ToolchainStep]:
        steps = []
        for package in packages or self.packages:
            old, new = self.newest_at(package, before_epoch), self.newest_at(package, after_epoch)
            if new is not None and old != new:
                steps.append(ToolchainStep(package, old[0] if old else None, new[0], new[1]))
        return steps

    def to_yaml(self) -> str:
        body = {
            "refreshed": self.refreshed,
            "source": "PyPI JSON API (final releases; time of the first file uploaded)",
            "refresh": "scripts/refresh_toolchain_timeline",
            "packages": {
                name: [{"version": v, "released": d} for v, d in items] for name, items in self._releases.items()
            },
        }
        return yaml.safe_dump(body, sort_keys=False)

    @classmethod
    def from_yaml(cls, text: str | bytes, label: str = TIMELINE_FILE) -> ToolchainTimeline:
        """Parse a timeline file, checked against its schema; ToolchainTimelineError (one line, starting
        with `label`) names what is wrong and where."""
        if len(text) > MAX_FILE_BYTES:
            raise ToolchainTimelineError(
                f"{label}: {len(text)} bytes, over the {MAX_FILE_BYTES} a timeline may have; {REBUILD}"
            )
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            problem = getattr(error, "problem", None) or type(error).__name__
            mark = getattr(error, "problem_mark", None)
            at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            raise ToolchainTimelineError(f"{label}: not YAML ({problem}{at}); {REBUILD}") from None
        if not isinstance(data, dict):
            raise ToolchainTimelineError(f"{label}: not a timeline (a YAML mapping with `packages`); {REBUILD}")
        try:
            parsed = _TimelineFile.model_validate(data)
        except ValidationError as error:
            first = error.errors()[0]
            loc = tuple(first["loc"])
            if first["type"] in ("missing", "extra_forbidden"):  # about a key: name the mapping it is (not) in
                where, _ = _where(data, loc[:-1])
                message = (
                    f"no `{loc[-1]}`" if first["type"] == "missing" else f"`{loc[-1]}` is not a key of the timeline"
                )
            else:
                where, key = _where(data, loc)
                message = (f"{key}: " if key else "") + first["msg"].removeprefix("Value error, ")
            more = len(error.errors()) - 1
            also = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
            raise ToolchainTimelineError(f"{label}: {where or 'the timeline'}: {message}{also}; {REBUILD}") from None
        for name, items in parsed.packages.items():
            seen: set[str] = set()
            for index, item in enumerate(items):
                if item.version in seen:
                    raise ToolchainTimelineError(
                        f"{label}: packages.{name}[{index}] ({name} {item.version}): listed twice; {REBUILD}"
                    )
                seen.add(item.version)
        return cls(
            {name: [(item.version, item.released) for item in items] for name, items in parsed.packages.items()},
            refreshed=parsed.refreshed,
        )


def load_timeline(path: str | Path | Any) -> ToolchainTimeline:
    """A timeline file (a path, or a package resource), checked on load."""
    try:
        text = path.read_bytes()
    except OSError as error:
        raise ToolchainTimelineError(f"{path}: cannot be read ({error.strerror or error}); {REBUILD}") from None
    return ToolchainTimeline.from_yaml(text, label=str(path))


def packaged_timeline() -> ToolchainTimeline:
    """The timeline shipped with the project (package data)."""
    return load_timeline(resources.files("kernelindex_pipeline.data").joinpath(TIMELINE_FILE))


class ToolchainRefreshError(ValueError):
    """A refresh that cannot build a timeline (the index unreachable, slow, or not PyPI's JSON API):
    one line naming the URL; nothing is written."""


class _PypiFile(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    upload_time_iso_8601: str | None = None
    yanked: bool = False

    @field_validator("upload_time_iso_8601")
    @classmethod
    def _a_time(cls, value: str | None) -> str | None:
        return value if value is None else _iso_time(value)


class _PypiDocument(BaseModel):
    """The part of PyPI's JSON API document (https://docs.pypi.org/api/json/) a refresh reads."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    releases: dict[str, list[_PypiFile]]


def refresh(
    packages: tuple[str, ...] = TRACKED_PACKAGES,
    *,
    index: str = PYPI_JSON,
    deadline_s: float = REFRESH_DEADLINE_S,
) -> ToolchainTimeline:
    """A timeline from PyPI's JSON API (`index`, with `{name}` for the package): each final release and
    the time of its first uploaded file. One deadline for the whole refresh, every download under it
    (imports.fetch.Deadline); ToolchainRefreshError for anything that keeps it from a whole, valid
    timeline, which it then checks as the loader will."""
    from kernelindex_pipeline.imports.fetch import Deadline, FetchError, fetch

    releases: dict[str, list[tuple[str, str]]] = {}
    with Deadline(deadline_s, what="the refresh") as deadline:
        for name in packages:
            url = index.format(name=name)
            try:
                body = fetch(url, max_bytes=MAX_RESPONSE_BYTES, deadline=deadline, what="a PyPI JSON document").data
            except FetchError as error:
                raise ToolchainRefreshError(str(error)) from None
            releases[name] = _final_releases(_pypi_document(body, url), url)
    timeline = ToolchainTimeline(releases, refreshed=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    ToolchainTimeline.from_yaml(timeline.to_yaml(), label="the refreshed timeline")  # what is written loads
    return timeline


def _pypi_document(body: bytes, url: str) -> _PypiDocument:
    try:
        document = json.loads(body)
    except (ValueError, RecursionError) as error:  # RecursionError: nested deeper than the decoder goes
        problem = str(error) if isinstance(error, ValueError) else "nested too deeply"
        raise ToolchainRefreshError(f"{url}: not JSON ({problem}); is it PyPI's JSON API?") from None
    if not isinstance(document, dict):
        raise ToolchainRefreshError(f"{url}: not PyPI's JSON API (a JSON object with `releases` expected)")
    try:
        return _PypiDocument.model_validate(document)
    except ValidationError as error:
        first = error.errors()[0]
        path = "".join(f"[{step!r}]" if i else str(step) for i, step in enumerate(first["loc"]))
        message = "missing" if first["type"] == "missing" else first["msg"].removeprefix("Value error, ")
        raise ToolchainRefreshError(f"{url}: not PyPI's JSON API ({path}: {message})") from None


def _final_releases(document: _PypiDocument, url: str) -> list[tuple[str, str]]:
    """(version, time of its first file, UTC) of each final release that has an unyanked file."""
    out = []
    for version, files in document.releases.items():
        try:
            parsed = Version(version)
        except InvalidVersion:
            continue  # a legacy version string of an old release: no install resolves to it
        times = [_utc_epoch(f.upload_time_iso_8601) for f in files if f.upload_time_iso_8601 and not f.yanked]
        if parsed.is_prerelease or parsed.is_devrelease or not times:
            continue
        out.append((version, datetime.fromtimestamp(min(times), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")))
    if not out:
        raise ToolchainRefreshError(
            f"{url}: no final release with an uploaded file; is it the package's JSON document?"
        )
    return sorted(out, key=lambda item: item[1])


def unpinned_requirements(setup_py: str, pyproject: str = "") -> set[str]:
    """Package names a Liger checkout requires without an exact pin (``torch>=2.1.2``), read from every
    string literal of setup.py and pyproject.toml that parses as a requirement."""
    return {
        r.name.lower()
        for r in requirements(setup_py, pyproject)
        if not any(s.operator in ("==", "===") for s in r.specifier)
    }  # callers keep the names the timeline tracks


def requirements(setup_py: str, pyproject: str = "") -> list[Requirement]:
    """Every string literal of setup.py (and line of pyproject.toml) that parses as a requirement with a
    version specifier: what a checkout asks the installer for."""
    found: list[Requirement] = []
    texts: list[str] = []
    try:
        texts = [
            n.value for n in ast.walk(ast.parse(setup_py)) if isinstance(n, ast.Constant) and isinstance(n.value, str)
        ]
    except (SyntaxError, ValueError):
        pass
    for line in pyproject.splitlines():
        stripped = line.strip().strip(",").strip('"').strip("'")
        if stripped:
            texts.append(stripped)
    for text in texts:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        if requirement.specifier or requirement.name.lower() in TRACKED_PACKAGES:
            found.append(requirement)
    return found


def write_timeline(timeline: ToolchainTimeline, path: str | Path) -> None:
    """Replace the file at `path` whole: a write that fails part way leaves the old file as it was."""
    path = Path(path)
    handle = tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.", delete=False)
    try:
        with handle:
            handle.write(timeline.to_yaml())
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
