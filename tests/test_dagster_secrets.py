"""A password in the catalogue URL never reaches Dagster's logs, metadata or resource config."""

from __future__ import annotations

from dagster import DagsterInstance, EnvVar, materialize
from dagster_support import LocalReleases, build_history_sdist
from sqlalchemy.engine import make_url
from test_dagster_history import CHAIN

from kernelindex_pipeline.defs.partitions import GPU_DIMENSION, VERSION_DIMENSION, benchmark_partition_key
from kernelindex_pipeline.defs.resources import BenchmarkRunnerResource, CatalogueResource


def test_password_never_appears_in_events_or_metadata(tmp_path, postgres_url):
    password = make_url(postgres_url).password
    assert password
    resources = {
        "catalogue": CatalogueResource(url=postgres_url),
        "releases": LocalReleases(sdist_path=str(build_history_sdist(tmp_path))),
        "runner": BenchmarkRunnerResource(),
    }
    with DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions(GPU_DIMENSION, ["nvidia-h100-80gb-hbm3"])
        instance.add_dynamic_partitions(VERSION_DIMENSION, ["0.5.0"])
        result = materialize(CHAIN, partition_key=benchmark_partition_key("nvidia-h100-80gb-hbm3", "0.5.0"), instance=instance, resources=resources)
        assert result.success
        logs = instance.all_logs(result.run_id)
    text = "\n".join(str(record) for record in logs)
    assert "catalogue_publication" in text and "already present" in text  # the events were captured
    assert password not in text


def test_catalogue_url_reaches_the_resource_as_an_env_var(monkeypatch):
    monkeypatch.setenv("KERNELINDEX_CATALOGUE_URL", "postgresql+psycopg://user:s3cret-pass@127.0.0.1:5432/db")
    from kernelindex_pipeline.definitions import build_definitions

    defs = build_definitions()
    url = defs.resources["catalogue"].url
    assert isinstance(url, EnvVar) and url.env_var_name == "KERNELINDEX_CATALOGUE_URL"
