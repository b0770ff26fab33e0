"""What a row our own sweep measured says beyond Liger's CSV format, written by sweep/ and read here by
liger/normalize.py (one module for both directions, so the two sides cannot drift apart):

- the provider cell `<provider>@<backend>` of a row whose Liger ops the dispatcher resolved to a named
  implementation (sweep/backends.py records it, sweep/rounds.py writes it): `liger@nvidia-cutedsl`;
- the kernel name of the tensor-parallel FSLCE script's rows, which print no CSV of their own
  (sweep/tp.py turns its lines into rows; normalize gives them the TP script's protocol);
- the L2 size the sweep's host reports, an ExecutionEnvironment label (sweep/environment.py writes it),
  by which reporting/efficiency.py flags L2-resident runs.
"""

from __future__ import annotations

import re

# A backend or Liger op name: lower-case words joined by - or _ (several backends join with +).
NAME = re.compile(r"^[a-z0-9]+(?:[-_][a-z0-9]+)*$")
BACKEND_SEPARATOR = "@"  # provider cell of a row with a resolved backend: liger@nvidia-cutedsl
TP_KERNEL = "fused_scaled_linear_cross_entropy_tp"
L2_LABEL = "l2_cache_bytes"


def provider_with_backend(provider: str, backend: str) -> str:
    """The provider cell of a row measured with `backend`: ("liger", "nvidia-cutedsl") -> `liger@nvidia-cutedsl`."""
    return f"{provider}{BACKEND_SEPARATOR}{backend}"


def split_provider(cell: str) -> tuple[str, str | None]:
    """`liger@nvidia-cutedsl` -> ("liger", "nvidia-cutedsl"); a plain provider -> (provider, None)."""
    stem, separator, backend = cell.partition(BACKEND_SEPARATOR)
    if not separator or not stem or not all(NAME.match(part) for part in backend.split("+")):
        return cell, None
    return stem, backend
