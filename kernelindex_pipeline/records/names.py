"""Record names: `kebab(s)` as docs/reference/record-contract.md §3 defines it."""

from __future__ import annotations

import re

NAME_LIMIT = 100
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def kebab(value: str) -> str:
    """Lowercase; each run outside [a-z0-9] becomes one '-'; strip '-' at both ends; cut to 100 characters.

    The cut happens after stripping, so a cut name may end in '-': that is the catalogue's rule.
    """
    return _NON_ALNUM.sub("-", value.lower()).strip("-")[:NAME_LIMIT]
