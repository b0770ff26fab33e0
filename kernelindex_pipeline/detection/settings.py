"""The detection settings, declared once: each field of `DetectionSettings` carries its option, its JSON key
and its help text, and the CLI's flags (`cli/catalogue.py`), the Dagster resource (`defs/resources.py`) and
regressions.json's `settings` block (`document.py`) are made from `SETTINGS`. What each setting means for
the statistics: docs/concepts/detection.md. Imports nothing heavy, so `--help` stays light.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any


def _setting(default: float | int, json_key: str, help_text: str) -> Any:
    return field(default=default, metadata={"json": json_key, "help": help_text})


@dataclass(frozen=True)
class DetectionSettings:
    """The statistical policy of regression detection."""

    alpha: float = _setting(0.001, "alpha", "significance level per series (Bonferroni over candidate splits)")
    min_effect: float = _setting(0.05, "minEffect", "smallest change reported, as a fraction (0.05 = 5 %)")
    min_segment: int = _setting(2, "minSegment", "runs needed on each side of a change")

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ValueError(f"significance level must be in (0, 1), e.g. 0.001; got {self.alpha!r}")
        if not 0 <= self.min_effect < 10:
            raise ValueError(f"minimum effect must be a fraction >= 0, e.g. 0.05 for 5 %; got {self.min_effect!r}")
        if self.min_segment < 1:
            raise ValueError(f"minimum segment must be at least one run; got {self.min_segment!r}")

    @property
    def min_log_effect(self) -> float:
        return math.log1p(self.min_effect)

    @property
    def min_runs(self) -> int:
        """Runs a series needs before it can be judged at all."""
        return 2 * self.min_segment

    def to_json(self) -> dict[str, Any]:
        """regressions.json's `settings` block: each setting under its JSON key."""
        return {s.json_key: getattr(self, s.name) for s in SETTINGS}


@dataclass(frozen=True)
class Setting:
    """One detection setting as the CLI, the resource and the JSON name it."""

    name: str  # the field: min_effect
    type: type
    default: float | int
    json_key: str  # minEffect
    help: str

    @property
    def option(self) -> str:
        """The command-line flag: --min-effect."""
        return "--" + self.name.replace("_", "-")

    @property
    def help_with_default(self) -> str:
        return f"{self.help} (default {self.default:g})"


SETTINGS = tuple(
    Setting(f.name, {"float": float, "int": int}[str(f.type)], f.default, f.metadata["json"], f.metadata["help"])
    for f in fields(DetectionSettings)
)
