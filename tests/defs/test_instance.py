"""Several import commands started at once on a fresh DAGSTER_HOME (issue 11, item 15): Dagster creates
its storage when the first instance is made, and concurrent creations used to break the home ("table
runs already exists", "more than one head present"). The CLI serialises that step with a file lock;
partition registration tolerates a concurrent registration of the same keys."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from dagster import DagsterInstance

from kernelindex_pipeline.defs.partitions import source_partitions

# What `import-history` and `import-ci` do first (cli.imports._run_import opens the instance with
# defs.instance.local_instance), then a partition registration as both imports do.
SNIPPET = textwrap.dedent(
    """
    from kernelindex_pipeline.defs.instance import local_instance
    from kernelindex_pipeline.home import prepared_dagster_home
    from kernelindex_pipeline.defs.partitions import register_partitions

    with local_instance(prepared_dagster_home()) as instance:
        register_partitions(instance, "history", [("nvidia-h100-80gb-hbm3", "0.5.0"), ("nvidia-a100-sxm4-80gb", "0.6.0")])
        instance.get_runs_count()
    print("done")
    """
)

PROCESSES = 4
TRIALS = 2


@pytest.mark.slow  # 11 s on a quiet two-core machine
def test_concurrent_imports_on_a_fresh_home_all_start(tmp_path):
    for trial in range(TRIALS):
        home = tmp_path / f"home-{trial}"
        env = {**os.environ, "DAGSTER_HOME": str(home)}
        procs = [
            subprocess.Popen(
                [sys.executable, "-W", "ignore", "-c", SNIPPET],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(PROCESSES)
        ]
        results = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]
        for p in procs:
            p.stdout.close()
            p.stderr.close()
        failed = [err.strip().splitlines()[-1] for code, _, err in results if code != 0]
        assert not failed, f"trial {trial}: {len(failed)} of {PROCESSES} processes failed: {failed}"
        assert all(out.strip() == "done" for _, out, _ in results)
        with DagsterInstance.from_config(str(home)) as instance:  # the home works afterwards, once per key
            assert sorted(instance.get_dynamic_partitions(source_partitions["history"].name)) == sorted(
                ["nvidia-h100-80gb-hbm3|0.5.0", "nvidia-a100-sxm4-80gb|0.6.0"]
            )
