"""What the tests share, and where their files are.

factories.py: every BenchmarkRun a test builds (seed manifests and their clones, the hand-shaped runs of
the detection tests, SampleCatalogue's runs with the records they reference); liger_rows.py: Liger CSV
rows; standin_release.py: a stand-in Liger release, torch and nvidia-smi; dagster_support.py: the history
chain's local releases; kernelindex_scenarios.py: the KernelIndex export's scenarios; liger_git.py: a
synthetic Liger git history; ui_support.py: Chromium for the browser tests; stored_files.py: the
session's artifact store; ci_slice.py: the real CI slice as records files; json_paths.py: paths into a JSON
value, for mutating seed manifests.
"""

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent  # the repository
FIXTURES = TESTS / "fixtures"  # small slices of real data, committed
