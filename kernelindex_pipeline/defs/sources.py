"""The three sources' chains in one registry (each defined in a module of its own: history_chain.py,
ci_chain.py, sweep_chain.py, each with its own `defs()`; definitions.py merges those)."""

from __future__ import annotations

from kernelindex_pipeline.defs.chain import Chain
from kernelindex_pipeline.defs.ci_chain import CI
from kernelindex_pipeline.defs.history_chain import HISTORY
from kernelindex_pipeline.defs.sweep_chain import SWEEP

CHAINS: dict[str, Chain] = {chain.spec.source: chain for chain in (HISTORY, CI, SWEEP)}
