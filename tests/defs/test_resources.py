"""A password in the catalogue URL never reaches Dagster's logs, metadata or resource config."""

from __future__ import annotations

from dagster import DagsterInstance, EnvVar, materialize
from sqlalchemy.engine import make_url

from kernelindex_pipeline.defs.chain_values import IO_MANAGER_KEY, ChainValuesIOManager
from kernelindex_pipeline.defs.partitions import benchmark_partition_key, register_partitions
from kernelindex_pipeline.defs.resources import BenchmarkRunnerResource, CatalogueResource
from tests.defs.test_history_chain import CHAIN
from tests.support.dagster_support import LocalReleases, build_history_sdist


def test_password_never_appears_in_events_or_metadata(tmp_path, postgres_url):
    password = make_url(postgres_url).password
    assert password
    resources = {
        "catalogue": CatalogueResource(url=postgres_url),
        "releases": LocalReleases(sdist_path=str(build_history_sdist(tmp_path))),
        "runner": BenchmarkRunnerResource(),
        IO_MANAGER_KEY: ChainValuesIOManager(base_dir=str(tmp_path / "values")),
    }
    with DagsterInstance.ephemeral() as instance:
        register_partitions(instance, "history", [("nvidia-h100-80gb-hbm3", "0.5.0")])
        result = materialize(
            CHAIN,
            partition_key=benchmark_partition_key("nvidia-h100-80gb-hbm3", "0.5.0"),
            instance=instance,
            resources=resources,
        )
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


# ---------------------------------------------------------------- issue 11, items 4 and 5: all of Dagster's storage


def _materialize_with_url(tmp_path, monkeypatch, url: str):
    """The history chain on a real on-disk instance (SQLite run/event storage, compute logs), the
    catalogue URL arriving through EnvVar as in definitions.py; returns (success, every stored byte)."""
    monkeypatch.setenv("KERNELINDEX_CATALOGUE_URL", url)
    home = tmp_path / "dagster_home"
    home.mkdir()
    resources = {
        "catalogue": CatalogueResource(url=EnvVar("KERNELINDEX_CATALOGUE_URL")),
        "releases": LocalReleases(sdist_path=str(build_history_sdist(tmp_path))),
        "runner": BenchmarkRunnerResource(work_root=str(tmp_path / "sweeps")),
        IO_MANAGER_KEY: ChainValuesIOManager(base_dir=str(home / "values")),
    }
    with DagsterInstance.local_temp(tempdir=str(home)) as instance:
        register_partitions(instance, "history", [("nvidia-h100-80gb-hbm3", "0.5.0")])
        result = materialize(
            CHAIN,
            partition_key=benchmark_partition_key("nvidia-h100-80gb-hbm3", "0.5.0"),
            instance=instance,
            resources=resources,
            raise_on_error=False,
        )
        logs = "\n".join(str(record) for record in instance.all_logs(result.run_id))
    stored = b"\n".join(path.read_bytes() for path in home.rglob("*") if path.is_file())
    return result.success, logs, stored


def _assert_absent(secret_pieces: list[str], *texts: str | bytes) -> None:
    for text in texts:
        for piece in secret_pieces:
            needle = piece.encode() if isinstance(text, bytes) else piece
            assert needle not in text, f"{piece!r} was stored or logged"


def test_a_query_string_password_never_reaches_dagster_storage(tmp_path, monkeypatch):
    secret = "Qs3cret-Pw9"
    url = f"postgresql+psycopg://kernelindex@127.0.0.1:1/catalogue?connect_timeout=5&password={secret}"
    success, logs, stored = _materialize_with_url(tmp_path, monkeypatch, url)
    assert not success and "cannot open the catalogue" in logs  # the failure was recorded ...
    _assert_absent([secret], logs, stored)  # ... without the password


def test_a_malformed_url_never_reaches_dagster_storage(tmp_path, monkeypatch):
    success, logs, stored = _materialize_with_url(
        tmp_path, monkeypatch, "postgresql://kernelindex:Sec9x@ret7y@db.example/catalogue"
    )
    assert not success and "not a well-formed URL" in logs
    _assert_absent(["Sec9x", "ret7y"], logs, stored)


def test_a_working_catalogue_with_a_query_string_password(tmp_path, monkeypatch, postgres_url):
    parsed = make_url(postgres_url)
    password = parsed.password
    url = parsed.set(password=None).update_query_dict({"password": password}).render_as_string(hide_password=False)
    success, logs, stored = _materialize_with_url(tmp_path, monkeypatch, url)
    assert success and "already present" in logs
    _assert_absent([password], logs, stored)


def test_the_regression_settings_resource_is_the_declared_detection_settings():
    """RegressionSettingsResource has a field per declared detection setting (detection.settings), with its
    default and description, and gives detection exactly what it was configured with."""
    from kernelindex_pipeline.defs.resources import RegressionSettingsResource
    from kernelindex_pipeline.detection.settings import SETTINGS, DetectionSettings

    fields = RegressionSettingsResource.model_fields
    for setting in SETTINGS:
        assert fields[setting.name].default == setting.default and fields[setting.name].description == setting.help
    assert set(fields) - {s.name for s in SETTINGS} == {"judgement_store"}
    configured = RegressionSettingsResource(alpha=0.01, min_effect=0.2, min_segment=3)
    assert configured.settings() == DetectionSettings(alpha=0.01, min_effect=0.2, min_segment=3)


def test_regressions_json_records_every_declared_setting_under_its_key():
    from kernelindex_pipeline.detection.detect import detect_regressions
    from kernelindex_pipeline.detection.document import regressions_json
    from kernelindex_pipeline.detection.settings import SETTINGS, DetectionSettings

    given = DetectionSettings(alpha=0.01, min_effect=0.2, min_segment=3)
    assert (
        regressions_json(detect_regressions([], given))["settings"]
        == {s.json_key: getattr(given, s.name) for s in SETTINGS}
        == {"alpha": 0.01, "minEffect": 0.2, "minSegment": 3}
    )
