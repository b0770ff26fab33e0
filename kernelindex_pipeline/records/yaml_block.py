"""A block-style YAML writer that writes the bytes PyYAML writes, several times faster.

The exports dump the whole catalogue as YAML twice (the submission bundle, KernelIndex's submission
document). PyYAML's emitter is libyaml's (C) there, but its representer and resolver are Python: a node per
value, every string resolved against every implicit pattern, ~25 s of a 30 s export at 28k runs. The
manifests have one shape (dicts, lists, str, int, float, bool, None) and repeat most of their scalars (kinds,
units, GPU names, digests of shared records), so `BlockWriter.dump` lays out the block structure itself
(PyYAML's own layout: two-space mappings, sequences inside a mapping not indented, `{}` and `[]` for empty
collections) and asks PyYAML for each distinct scalar once, in the context that decides its style (a key or a
value), keeping the answer. Quoting is therefore PyYAML's with the given dumper, `records/yaml12.py`'s YAML
1.2 guarantee included.

Anything outside that shape is dumped by PyYAML whole, so the bytes are the same whatever the data: another
type (a tuple, a str subclass), a key that is not a str or not a simple key (128 characters or more), a
scalar PyYAML writes over more than one line (its continuation lines depend on the indentation), a very long
scalar (PyYAML folds past `width`), and, where the dumper writes aliases, a dict or list met twice in one
document. tests/records/test_yaml_block.py compares both on generated documents.
"""

from __future__ import annotations

import io
import re
from typing import Any

import yaml

_SCALARS = (str, int, float, bool, type(None))
_BREAKS = frozenset("\n\r\x85\u2028\u2029")  # YAML's line breaks: a scalar written with one spans lines
_LONGEST = 10_000  # scalars at least this long go to PyYAML (it folds plain and quoted scalars past `width`)
# Strings PyYAML's emitter writes plain in block context when its resolver reads them back as strings
# (emitter.analyze_scalar: no indicator first, no ": " or " #", no space at either end, no "---"/"..." start,
# printable): a conservative subset; anything else is asked of PyYAML.
_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./+=-]*(?::[A-Za-z0-9_./+=-]+)*")
_STR, _INT, _FLOAT = "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"


class _Fallback(Exception):
    """The document needs PyYAML itself."""


class BlockWriter:
    """`dump(data)` == ``yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True,
    default_flow_style=False, width=width)``, as str. `aliases`: whether the dumper writes anchors for a
    collection met twice (PyYAML's default); False for a dumper whose `ignore_aliases` is always true."""

    def __init__(self, dumper: type[Any], *, aliases: bool = True, width: int = 1_000_000) -> None:
        self.dumper = dumper
        self.aliases = aliases
        self.width = width
        self._values: dict[tuple[type, Any], str] = {}
        self._keys: dict[str, str] = {}
        self.fallbacks = 0  # documents PyYAML dumped whole
        self._resolver = dumper(io.StringIO())  # its implicit resolvers (yaml12's included) decide plain or quoted

    def _pyyaml(self, data: Any) -> str:
        return yaml.dump(
            data, Dumper=self.dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=self.width
        )

    def dump(self, data: Any) -> str:
        if type(data) not in (dict, list) or not data:
            return self._pyyaml(data)
        out: list[str] = []
        try:
            if type(data) is dict:
                self._mapping(data, 0, False, out, set())
            else:
                self._sequence(data, 0, False, out, set())
        except _Fallback:
            self.fallbacks += 1
            return self._pyyaml(data)
        return "".join(out)

    # ------------------------------------------------------------------------------------------ scalars

    def _value(self, value: Any) -> str:
        # keyed by type and repr: True == 1 == 1.0 and 0.0 == -0.0 in a dict, not in YAML
        key = (type(value), value if type(value) is str else repr(value))
        text = self._values.get(key)
        if text is None:
            if type(value) is str and len(value) >= _LONGEST:
                raise _Fallback
            text = self._plain(value)
            if text is None:
                dumped = self._pyyaml({"k": value})  # "k: <scalar>\n"
                text = dumped[3:-1]
                if not dumped.startswith("k: ") or not _BREAKS.isdisjoint(text):
                    raise _Fallback
            self._values[key] = text
        return text

    def _plain(self, value: Any) -> str | None:
        """The plain scalar SafeRepresenter writes for `value` where its resolver reads it back as the same type
        (so the emitter writes it plain, untagged); None: ask PyYAML."""
        kind = type(value)
        if value is None:
            return "null"
        if kind is bool:
            return "true" if value else "false"
        if kind is str:
            text, tag = value, _STR
            if not _PLAIN.fullmatch(text):
                return None
        elif kind is int:
            text, tag = str(value), _INT
        elif kind is float:
            if value != value or value in (float("inf"), float("-inf")):
                return None  # .nan, .inf: PyYAML's
            text, tag = repr(value).lower(), _FLOAT  # SafeRepresenter.represent_float
            if "." not in text and "e" in text:
                text = text.replace("e", ".0e", 1)
        else:
            return None
        return text if self._resolver.resolve(yaml.ScalarNode, text, (True, False)) == tag else None

    def _key(self, key: Any) -> str:
        if type(key) is not str:
            raise _Fallback
        text = self._keys.get(key)
        if text is None and len(key) < 128 and _PLAIN.fullmatch(key):  # a simple key (emitter.check_simple_key)
            text = self._plain(key)
            if text is not None:
                self._keys[key] = text
        if text is None:
            dumped = self._pyyaml({key: 0})  # "<key>: 0\n"
            text = dumped[:-4]
            if dumped.startswith("?") or not dumped.endswith(": 0\n") or not _BREAKS.isdisjoint(text):
                raise _Fallback  # an explicit key ("? ...", 128 characters or more) or a multi-line one
            self._keys[key] = text
        return text

    # ------------------------------------------------------------------------------------------ layout

    def _seen(self, data: Any, seen: set[int]) -> None:
        if self.aliases:
            if id(data) in seen:
                raise _Fallback  # PyYAML would write an anchor and an alias
            seen.add(id(data))

    def _mapping(self, data: dict, indent: int, inline: bool, out: list[str], seen: set[int]) -> None:
        """A non-empty mapping at `indent`; `inline`: its first key goes on the current line (after "- ")."""
        self._seen(data, seen)
        pad = " " * indent
        keys, values = self._keys, self._values  # the caches, looked up inline: this loop is the export's hot path
        for key, value in data.items():
            line = (pad if not inline else "") + (keys.get(key) or self._key(key)) + ":"  # type: ignore[arg-type]
            inline = False
            kind = type(value)
            if kind is str:
                out.append(line + " " + (values.get((str, value)) or self._value(value)) + "\n")
            elif kind is dict:
                if value:
                    out.append(line + "\n")
                    self._mapping(value, indent + 2, False, out, seen)
                else:
                    out.append(line + " {}\n")
            elif kind is list:
                if value:
                    out.append(line + "\n")
                    self._sequence(value, indent, False, out, seen)  # PyYAML: not indented inside a mapping
                else:
                    out.append(line + " []\n")
            elif kind in _SCALARS:
                out.append(line + " " + self._value(value) + "\n")
            else:
                raise _Fallback

    def _sequence(self, data: list, indent: int, inline: bool, out: list[str], seen: set[int]) -> None:
        self._seen(data, seen)
        pad = " " * indent
        for item in data:
            line = (pad if not inline else "") + "-"
            inline = False
            kind = type(item)
            if kind is dict:
                if item:
                    out.append(line + " ")
                    self._mapping(item, indent + 2, True, out, seen)
                else:
                    out.append(line + " {}\n")
            elif kind is list:
                if item:
                    out.append(line + " ")
                    self._sequence(item, indent + 2, True, out, seen)
                else:
                    out.append(line + " []\n")
            elif kind in _SCALARS:
                out.append(line + " " + self._value(item) + "\n")
            else:
                raise _Fallback
