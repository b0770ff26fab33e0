"""The KernelIndex exports (issue 18): the submission document and the importer bundle of the seeds, a CI
slice (with and without its memory runs) and a stand-in sweep on two hosts, checked against the published
JSON Schemas (skipped with a message where ../shared is absent) and the TypeScript shapes in docs/reference/exports.md.
KernelIndex's own code runs on the same exports in scripts/kernelindex_acceptance/run.sh (needs npm)."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from kernelindex_pipeline.catalogue.export import export_kernelindex
from kernelindex_pipeline.records.canonical import digest_of
from kernelindex_pipeline.records.units import AmbiguousDuration, duration_ns, normal_form
from tests.support import ROOT
from tests.support import kernelindex_scenarios as scenarios

EXPORTS_PAGE = ROOT / "docs" / "reference" / "exports.md"


def _ts_fields(type_name: str) -> dict[str, str]:
    """Top-level fields of a `type X = { ... }` block of the exports page's ts code (name -> its type text)."""
    text = EXPORTS_PAGE.read_text("utf-8")
    block = re.search(r"```ts\n(.*?)```", text[text.index("## Publishing in KernelIndex") :], re.S)[1]
    body = re.search(rf"type {type_name} = \{{\n(.*?)\n\}}", block, re.S)[1]
    return dict(re.match(r"\s*(\w+\??): (.*)", line).groups() for line in body.splitlines())


def _entry_keys(type_text: str) -> tuple[set[str], set[str]]:
    """(required, optional) keys of `{ a: T; b?: U }[]`."""
    inner = type_text[type_text.index("{") + 1 : type_text.rindex("}")]
    names = [part.split(":")[0].strip() for part in inner.split(";")]
    return {n for n in names if not n.endswith("?")}, {n.rstrip("?") for n in names if n.endswith("?")}


def _check_entries(entries: list, type_text: str, where: str) -> None:
    required, optional = _entry_keys(type_text)
    for entry in entries:
        assert required <= set(entry) <= required | optional, (where, sorted(entry))


def yaml12_load(text: str):
    """The document as a YAML 1.2 (core schema) parser reads it, as KernelIndex does (ruamel.yaml)."""
    from ruamel.yaml import YAML

    return YAML(typ="safe", pure=True).load(text)


def _export(tmp_path, records, snapshots, include_memory=False):
    from kernelindex_pipeline.catalogue.kernelindex import group_for_kernelindex, submission_document
    from kernelindex_pipeline.liger.catalogue import default_catalogue

    files = export_kernelindex(records, tmp_path, snapshots=snapshots, include_memory=include_memory)
    text = files.submission.path.read_text("utf-8")
    documents = list(yaml.safe_load_all(text))
    assert len(documents) == 1  # KernelIndex reads one document ("Source contains multiple documents")
    # a YAML 1.2 parser reads back the values written (a commit such as 49e6353 stays a string)
    written = submission_document(group_for_kernelindex(records, default_catalogue(), include_memory=include_memory))
    assert yaml12_load(text) == documents[0] == written
    assert "&id" not in text and "*id" not in text  # no YAML aliases (KernelIndex allows 100)
    (bundle,) = files.bundles  # each scenario is Liger's rows or our sweep, never both
    return documents[0], json.loads(bundle.path.read_text("utf-8"))


SCENARIOS = {
    "seeds": lambda: (*scenarios.seeds(), False),
    "ci-slice": lambda: (*scenarios.ci_slice("full"), False),
    "ci-slice-memory": lambda: (*scenarios.ci_slice("full"), True),
    "ci-files": lambda: (*scenarios.ci_files("full"), False),
    "standin-sweep": lambda: (*scenarios.standin_sweep(), False),
    "standin-sweep-public": lambda: (*scenarios.standin_sweep(public_base_url=scenarios.PUBLIC_EVIDENCE), False),
}


@pytest.fixture(scope="module", params=list(SCENARIOS))
def exported(request, tmp_path_factory):
    records, snapshots, memory = SCENARIOS[request.param]()
    document, bundle = _export(tmp_path_factory.mktemp(request.param), records, snapshots, memory)
    return request.param, records, document, bundle


def test_both_routes_have_the_readme_shapes(exported):
    _, _, document, bundle = exported
    submission_fields = _ts_fields("SubmissionDocument")
    assert set(document) == set(submission_fields)
    for group in ("implementations", "runs"):
        _check_entries(document[group], submission_fields[group], group)
    bundle_fields = _ts_fields("ImportBundle")
    assert {f.rstrip("?") for f in bundle_fields} >= set(bundle) >= {f for f in bundle_fields if not f.endswith("?")}
    for group in ("snapshots", "projects", "operations", "workloads", "implementations", "runs"):
        _check_entries(bundle[group], bundle_fields.get(group) or bundle_fields[group + "?"], group)
    artifact_required, artifact_optional = _entry_keys(
        re.search(r"type BundleArtifact = (\{.*\})", EXPORTS_PAGE.read_text("utf-8"))[1]
    )
    for run in bundle["runs"]:
        for artifact in run.get("artifacts", []):
            assert artifact_required <= set(artifact) <= artifact_required | artifact_optional


def test_every_implementation_names_a_project_the_export_has(exported):
    _, _, document, bundle = exported
    slugs = {p["metadata"]["name"] for p in document["projects"]}
    assert {
        i["projectSlug"] for i in document["implementations"]
    } <= slugs  # an implementation two providers share: its first
    assert {i["projectSlug"] for i in bundle["implementations"]} == {p["slug"] for p in bundle["projects"]}


def test_runs_reference_what_the_export_holds_and_digests_are_kernelindex_normal(exported):
    _, _, document, _ = exported
    held = {digest_of(m) for group in ("operations", "workloads") for m in document[group]}
    held |= {digest_of(i["manifest"]) for i in document["implementations"]}
    for entry in document["runs"]:
        spec = entry["run"]["spec"]
        assert {spec["implementationDigest"], spec["workloadDigest"]} <= held
        assert digest_of(entry["protocol"]) == spec["protocolDigest"]
        assert digest_of(entry["environment"]) == spec["environmentDigest"]
        for manifest in (entry["run"], entry["protocol"], entry["environment"]):
            assert normal_form(manifest) == manifest  # written as KernelIndex stores it


def test_memory_runs_only_behind_the_setting(exported):
    name, records, document, _ = exported
    memory = [r for r in records if r["kind"] == "BenchmarkRun" and "timing" not in r["spec"]]
    exported_memory = [e for e in document["runs"] if "timing" not in e["run"]["spec"]]
    if name == "ci-slice-memory":
        assert memory and len(exported_memory) == len(memory)
    else:
        assert exported_memory == []


def test_tensors_follow_the_operations_inputs(exported):
    _, _, document, _ = exported
    operations = {digest_of(m): m for m in document["operations"]}
    for workload in document["workloads"]:
        inputs = [a["name"] for a in operations[workload["spec"]["operationSpecDigest"]]["spec"]["inputs"]]
        names = list(workload["spec"]["tensors"])
        assert names == [n for n in inputs if n in names] + [n for n in names if n not in inputs]


def _runs(records: list[dict]) -> list[dict]:
    return [r for r in records if r["kind"] == "BenchmarkRun"]


def test_importer_bundle_links_sources_like_kernelindexs_importer(exported):
    name, records, _, bundle = exported
    # Liger's rows under KernelIndex's Liger source; our sweeps under ours
    sweep = name.startswith("standin-sweep")
    assert bundle["source"]["slug"] == ("kernelindex-pipeline-sweeps" if sweep else "liger-kernel-bench")
    assert bundle["snapshots"]
    assert all(s["contentDigest"].startswith("sha256:") for s in bundle["snapshots"])
    liger_runs = bundle["runs"]
    # the sweep's sentinel runs calibrate its environment: not exported as catalogue operations
    assert not any(r["manifest"]["metadata"]["name"].startswith("kernelindex-sentinel") for r in liger_runs)
    assert not any(o["manifest"]["metadata"]["name"].startswith("kernelindex-sentinel") for o in bundle["operations"])
    # a run's source name is its record's sourceNative.externalId (a measured run's KernelIndex form has none)
    from kernelindex_pipeline.catalogue.kernelindex import ranked_by_interval

    external_ids = {
        digest_of(form): r["spec"]["sourceNative"]["externalId"]
        for r in _runs(records)
        for form in (normal_form(r), ranked_by_interval(normal_form(r)))
    }
    assert all(r["externalId"] == external_ids[digest_of(r["manifest"])] for r in bundle["runs"])
    assert all("externalId" in w for w in bundle["workloads"]) or sweep
    # every source name is linked, also where two kernels share one case, operation or implementation
    from kernelindex_pipeline.liger.identity import parse_external_id

    found = [parse_external_id(r["externalId"]) for r in liger_runs]
    assert {w.get("externalId") for w in bundle["workloads"] if "externalId" in w} == {
        f"{i.kernel}/{i.case_key}" for i in found
    }
    assert {e["externalId"] for e in bundle["implementations"] if "externalId" in e} == {
        f"{i.kernel}/{i.provider}" for i in found
    }
    assert {e["externalId"] for e in bundle["operations"] if "externalId" in e} == {i.kernel for i in found}
    if name == "standin-sweep-public":  # raw samples and logs in a fetchable store travel as artifacts
        assert all(
            {a["role"] for a in r["artifacts"]} >= {"raw_samples"}
            and all(a["uri"].startswith(scenarios.PUBLIC_EVIDENCE + "/") for a in r["artifacts"])
            for r in bundle["runs"]
            if "timing" in r["manifest"]["spec"]
        )
    if name == "standin-sweep":  # a local store's references (ni:///) no one can fetch: no artifacts
        assert not any("artifacts" in r for r in bundle["runs"])
        assert all(r["manifest"]["spec"]["evidence"]["rawSamples"]["uri"].startswith("ni:///") for r in bundle["runs"])
    if sweep:  # pinned revisions
        liger = [i for i in bundle["implementations"] if i["projectSlug"] == "liger-kernel"]
        assert liger and all(i["manifest"]["spec"]["projectRevision"]["version"] == "v0.8.5" for i in liger)
        assert all("file://" not in json.dumps(r) for r in liger_runs)  # no host paths


def test_published_schemas_accept_every_exported_manifest(exported):
    from tests.test_published_schemas import published_validators

    validators = published_validators()  # skipped, saying so, where ../shared is absent (a failure on CI)
    _, _, document, _ = exported
    manifests = [*document["projects"], *document["operations"], *document["workloads"]]
    manifests += [i["manifest"] for i in document["implementations"]]
    manifests += [m for e in document["runs"] for m in (e["run"], e["protocol"], e["environment"])]
    problems = [
        f"{m['kind']} {m['metadata']['name']}: {e.message}"
        for m in manifests
        for e in validators[m["kind"]].iter_errors(m)
    ]
    assert problems == []


# --- units: every unit-bearing field we write, as KernelIndex normalises it --------------------------------


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("25 ms", 25_000_000),
        ("25ms", 25_000_000),
        ("0.5 us", 500),
        ("2 µs", 2000),
        ("1.5 s", 1_500_000_000),
        ("7 ns", 7),
        (12, 12),
    ],
)
def test_durations_become_integer_nanoseconds(text, ns):
    assert duration_ns(text) == ns


@pytest.mark.parametrize("text", ["0.0000001 ms", "1.5 ns", "25 min", "-1 ms", "ms", 2**53, 1.5, True])
def test_ambiguous_durations_are_refused_like_kernelindex(text):
    with pytest.raises(AmbiguousDuration):
        duration_ns(text)


def test_duration_fields_digest_as_integer_nanoseconds():
    protocol = {
        "apiVersion": "kernelindex.dev/v1alpha1",
        "kind": "BenchmarkProtocol",
        "metadata": {"name": "p"},
        "spec": {
            "harness": {"name": "h"},
            "measurement": {"timer": "cuda_events", "primaryStatistic": "median", "warmupDuration": "25 ms"},
        },
    }
    as_ns = {
        **protocol,
        "spec": {**protocol["spec"], "measurement": {**protocol["spec"]["measurement"], "warmupDuration": 25_000_000}},
    }
    assert digest_of(protocol) == digest_of(as_ns)
    latency = {
        "median": "1.5 us",
        "mean": "1 us",
        "p05": "1 us",
        "p95": "2 us",
        "minimum": "1 us",
        "maximum": "3 us",
        "mad": "0.1 us",
        "confidence95": ["1 us", "2 us"],
    }
    run = {
        "apiVersion": "kernelindex.dev/v1alpha1",
        "kind": "BenchmarkRun",
        "metadata": {"name": "r"},
        "spec": {"timing": {"primaryStatistic": "median", "latencyNs": latency}},
    }
    normal = normal_form(run)["spec"]["timing"]["latencyNs"]
    assert normal == {
        "median": 1500,
        "mean": 1000,
        "p05": 1000,
        "p95": 2000,
        "minimum": 1000,
        "maximum": 3000,
        "mad": 100,
        "confidence95": [1000, 2000],
    }
    support = {"hardwareArchitectures": ["sm_90", "sm_80", "sm_90"], "dtypes": ["fp32", "bf16"]}
    implementation = {
        "apiVersion": "kernelindex.dev/v1alpha1",
        "kind": "ImplementationRevision",
        "metadata": {"name": "i"},
        "spec": {"support": support},
    }
    assert normal_form(implementation)["spec"]["support"] == {
        "hardwareArchitectures": ["sm_80", "sm_90"],
        "dtypes": ["bf16", "fp32"],
    }


def test_the_sweeps_unit_bearing_fields_are_written_in_kernelindex_units():
    """Every unit-bearing field a sweep writes: durations integer ns; latency measurements integer ns; peak
    memory in bytes (KernelIndex takes any finite number: Liger's MB times 2**20 is not always whole)."""
    records, _ = scenarios.standin_sweep()
    protocols = [m for m in records if m["kind"] == "BenchmarkProtocol"]
    assert any(type(p["spec"]["measurement"].get("warmupDuration")) is int for p in protocols)  # the sentinel's
    for manifest in records:
        assert normal_form(manifest) == manifest
        if manifest["kind"] == "BenchmarkRun":
            for measurement in manifest["spec"].get("measurements", []):
                assert measurement["unit"] in ("ns", "bytes"), measurement
                assert (
                    type(measurement["value"]) is int
                    if measurement["unit"] == "ns"
                    else isinstance(measurement["value"], (int, float))
                )


def test_editorial_metadata_as_kernelindexs_importer_writes_it(tmp_path):
    """Descriptions (and an operation's script link at the source commit) are added in the export only;
    digests and our records stay as they are."""
    records, snapshots = scenarios.seeds()
    before = json.dumps(records, sort_keys=True)
    commit = "2120862ba532c9449e72d603ba6324310ae756e7"
    files = export_kernelindex(records, tmp_path, snapshots=snapshots, source_commit=commit)
    document = yaml.safe_load(files.submission.path.read_text("utf-8"))
    assert json.dumps(records, sort_keys=True) == before
    for operation in document["operations"]:
        assert operation["metadata"]["description"]
        (ref,) = operation["metadata"]["sourceRefs"]
        assert ref["url"].startswith(
            f"https://github.com/linkedin/Liger-Kernel/blob/{commit}/benchmark/scripts/benchmark_"
        )
    assert all(entry["manifest"]["metadata"]["description"] for entry in document["implementations"])
    originals = {digest_of(m) for m in records}
    assert {digest_of(m) for m in document["operations"]} <= originals  # metadata never changes a digest


def test_liger_rows_and_our_sweeps_go_to_bundles_of_their_own_sources(tmp_path):
    ci, ci_snapshots = scenarios.ci_slice("reference")
    sweep, sweep_snapshots = scenarios.standin_sweep()
    files = export_kernelindex(ci + sweep, tmp_path, snapshots=ci_snapshots + sweep_snapshots)
    upstream, ours = (json.loads(bundle.path.read_text("utf-8")) for bundle in files.bundles)
    assert (
        upstream["source"]["slug"] == "liger-kernel-bench" and ours["source"]["slug"] == "kernelindex-pipeline-sweeps"
    )
    assert len(upstream["runs"]) + len(ours["runs"]) == len(
        yaml.safe_load(files.submission.path.read_text("utf-8"))["runs"]
    )
    assert [s["locator"] for s in upstream["snapshots"]] == [s["locator"] for s in ci_snapshots]
    assert [s["locator"] for s in ours["snapshots"]] == [s["locator"] for s in sweep_snapshots]
    assert all(r["environment"]["spec"]["software"] for r in ours["runs"])
    assert not any(r["environment"]["spec"]["software"] for r in upstream["runs"])
    # an export without sweeps leaves no sweeps bundle of an earlier export behind
    export_kernelindex(ci, tmp_path, snapshots=ci_snapshots)
    assert not (tmp_path / "kernelindex-import-bundle.sweeps.json").exists()


def test_an_implementation_two_projects_share_goes_to_the_provider_of_its_first_row(tmp_path):
    """megatron_rms_norm's `torch` (pytorch) and `megatron` (megatron-lm) make one ImplementationRevision. KernelIndex's
    importer files it under the provider of the first CSV row that makes it (its first bundle entry of a digest
    makes the row): here `torch`, though the `megatron` run was observed first, so a catalogue's export in time
    order (or any run order) must still say pytorch."""
    from kernelindex_pipeline.liger import import_csv
    from tests.support.liger_rows import csv_bytes, row

    shared = {"kernel_name": "megatron_rms_norm", "extra_benchmark_config_str": '{"S": 4096, "B": 1}'}
    rows = [
        row(**shared, kernel_provider="torch", timestamp="2026-06-10 21:03:38", liger_version="0.8.0"),
        row(**shared, kernel_provider="megatron", timestamp="2026-06-10 21:03:37", liger_version="0.8.0"),
    ]
    records = list(import_csv(csv_bytes(rows), profile="reference").manifests.values())
    runs = [m for m in records if m["kind"] == "BenchmarkRun"]
    assert len({r["spec"]["implementationDigest"] for r in runs}) == 1  # one record, two providers
    for order, given in (("given", records), ("time", records), ("given-reversed", records[::-1])):
        files = export_kernelindex(given, tmp_path / order, order="time" if order == "time" else "given")
        document = yaml.safe_load(files.submission.path.read_text("utf-8"))
        assert [i["projectSlug"] for i in document["implementations"]] == ["pytorch"], order
        (bundle,) = files.bundles
        entries = json.loads(bundle.path.read_text("utf-8"))["implementations"]
        assert [(e["externalId"], e["projectSlug"]) for e in entries] == [
            ("megatron_rms_norm/torch", "pytorch"),
            ("megatron_rms_norm/megatron", "megatron-lm"),
        ], order


def test_no_two_exported_manifests_of_one_kind_share_a_name(tmp_path):
    """A mixed catalogue (Liger's CI rows and history seeds, our sweep of 0.8.5 on two hosts): where identities
    differ, names differ, so KernelIndex's pages (found by slug) show each. The sweep's implementations are
    pinned to the release measured, the history's are not: the pinned ones say their revision
    (liger-bench-rms-norm-liger-v0-8-5 beside liger-bench-rms-norm-liger). Runs have no slug in KernelIndex and
    keep its importer's names, cut at 100 characters (docs/reference/exports.md: Publishing in KernelIndex), so they are not held
    to this."""
    from collections import defaultdict

    host_a, snaps_a = scenarios.standin_sweep("host-a")
    host_b, snaps_b = scenarios.standin_sweep("host-b", kernel="5.15.0-122-generic", driver="550.90.07")
    (ci, ci_snaps), (seeds, seed_snaps) = scenarios.ci_slice("reference"), scenarios.seeds()
    files = export_kernelindex(
        ci + seeds + host_a + host_b, tmp_path, snapshots=ci_snaps + seed_snaps + snaps_a + snaps_b
    )
    document = yaml.safe_load(files.submission.path.read_text("utf-8"))
    manifests = [*document["projects"], *document["operations"], *document["workloads"]]
    manifests += [i["manifest"] for i in document["implementations"]]
    manifests += [m for e in document["runs"] for m in (e["protocol"], e["environment"])]
    digests_by_name = defaultdict(set)
    for manifest in manifests:
        digests_by_name[manifest["kind"], manifest["metadata"]["name"]].add(digest_of(manifest))
    assert {name: digests for name, digests in digests_by_name.items() if len(digests) > 1} == {}
    liger_pinned = [
        i["manifest"]
        for i in document["implementations"]
        if i["manifest"]["spec"]["projectRevision"].get("version") == "v0.8.5"
    ]
    assert liger_pinned and all(m["metadata"]["name"].endswith("-v0-8-5") for m in liger_pinned)
    slugs = {e["slug"] for b in files.bundles for e in json.loads(b.path.read_text("utf-8"))["implementations"]}
    assert {"liger-bench-rms-norm-liger", "liger-bench-rms-norm-liger-v0-8-5"} <= slugs


def test_what_a_kernelindex_export_leaves_out_is_noted(tmp_path):
    """The export's notes (KernelIndexFiles.notes, the submission's header, printed by `export --kernelindex`) say
    what stayed in our catalogue: the sentinel's runs, and evidence of a local store KernelIndex cannot fetch."""
    records, snapshots = scenarios.standin_sweep()
    files = export_kernelindex(records, tmp_path / "local", snapshots=snapshots, include_memory=True)
    sentinel = sum(
        m["kind"] == "BenchmarkRun" and m["metadata"]["name"].startswith("kernelindex-sentinel") for m in records
    )
    (bundle,) = files.bundles
    runs = json.loads(bundle.path.read_text("utf-8"))["runs"]
    references = sum(len(r["manifest"]["spec"]["evidence"]) for r in runs)
    assert sentinel and references
    assert files.notes == [
        f"{sentinel} sentinel runs left out (calibration of a sweep, not kernels to rank)",
        f"{len(runs)} runs we measured written without spec.sourceNative, so KernelIndex ranks them by their "
        "confidence95 (strict_exact); their KernelIndex digests are those of this form",
        f"{references} evidence references of a local artifact store (ni:///) not registered as artifacts: KernelIndex "
        "cannot fetch them (set an https base URL or use object storage); the runs still name them",
    ]
    header = files.submission.path.read_text("utf-8").split("\n---", 1)[0]
    assert all(f"# {note}" in header for note in files.notes)
    public_records = scenarios.standin_sweep(public_base_url=scenarios.PUBLIC_EVIDENCE)[0]
    public = export_kernelindex(public_records, tmp_path / "public", snapshots=snapshots, include_memory=True)
    assert public.notes == files.notes[:2]


def test_our_measured_runs_are_ranked_by_their_intervals_liger_rows_as_the_source_ranks_them(tmp_path):
    """KernelIndex ranks a cohort `source_native` (the source's order, ties only on equal values) when any of its
    runs has spec.sourceNative, else `strict_exact` (runs whose confidence95 overlap share a rank; policy/ranking.ts).
    Our sweep's runs go to KernelIndex without sourceNative and with their interval, everything else of their
    spec as in our catalogue; Liger's history and CI runs keep theirs (issue 32, item 5)."""
    ci, ci_snapshots = scenarios.ci_slice("reference")
    sweep, sweep_snapshots = scenarios.standin_sweep()
    files = export_kernelindex(ci + sweep, tmp_path, snapshots=ci_snapshots + sweep_snapshots)
    document = yaml.safe_load(files.submission.path.read_text("utf-8"))
    upstream, ours = (json.loads(bundle.path.read_text("utf-8"))["runs"] for bundle in files.bundles)
    ours_by_name = {r["metadata"]["name"]: r for r in _runs(sweep)}
    submitted = {e["run"]["metadata"]["name"]: e["run"] for e in document["runs"]}
    assert ours and upstream
    for entry in ours:
        run = entry["manifest"]
        assert "sourceNative" not in run["spec"] and run["spec"]["timing"]["latencyNs"]["confidence95"]
        original = ours_by_name[run["metadata"]["name"]]
        assert run["spec"] == {k: v for k, v in original["spec"].items() if k != "sourceNative"}
        assert submitted[run["metadata"]["name"]] == run  # the submission route says the same
        assert entry["externalId"] == original["spec"]["sourceNative"]["externalId"]
    ci_by_name = {r["metadata"]["name"]: r for r in _runs(ci)}
    for entry in upstream:
        assert entry["manifest"] == normal_form(ci_by_name[entry["manifest"]["metadata"]["name"]])  # as it is
        assert entry["manifest"]["spec"]["sourceNative"]["source"] == "liger-kernel-bench"


def _loader_date_fields() -> list[str]:
    from kernelindex_pipeline.catalogue.export import BUNDLE_LOADER_NAME

    text = (ROOT / "kernelindex_pipeline" / "data" / BUNDLE_LOADER_NAME).read_text("utf-8")
    return json.loads(re.search(r"export const DATE_FIELDS = (\[.*?\])", text)[1])


def test_the_bundles_loader_makes_dates_of_exactly_the_fields_kernelindex_takes_as_dates():
    """KernelIndex's ImportBundle (the exports page's lines) takes some fields as Date; JSON writes them as strings, and the
    loader shipped with the export (kernelindex-load-bundle.mjs) revives exactly those (issue 32, item 2)."""
    dates = [
        name.rstrip("?")
        for group, text in _ts_fields("ImportBundle").items()
        for name, kind in re.findall(r"(\w+\??): (\w+)", text)
        if kind == "Date"
    ]
    assert sorted(dates) == sorted(_loader_date_fields()) == ["fetchedAt", "observedAt"]


def test_every_export_with_a_bundle_ships_the_loader_and_node_reads_each_bundle_with_it(tmp_path):
    """The loader is written beside the bundles (and removed with them); where node is installed, it loads every
    bundle of a history and a sweep export: each snapshot's dates are Dates at the instant written, the rest is
    the JSON as written (KernelIndex's acceptance harness loads the bundles with it: scripts/kernelindex_acceptance)."""
    import shutil
    import subprocess

    from kernelindex_pipeline.catalogue.export import BUNDLE_LOADER_NAME

    ci, ci_snapshots = scenarios.ci_slice("reference")
    sweep, sweep_snapshots = scenarios.standin_sweep()
    files = export_kernelindex(ci + sweep, tmp_path, snapshots=ci_snapshots + sweep_snapshots)
    shipped = (ROOT / "kernelindex_pipeline" / "data" / BUNDLE_LOADER_NAME).read_bytes()
    assert (tmp_path / BUNDLE_LOADER_NAME).read_bytes() == shipped and len(files.bundles) == 2
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the loader was not run (the acceptance harness runs it)")
    script = (
        f"import {{ loadImportBundle }} from {json.dumps((tmp_path / BUNDLE_LOADER_NAME).as_uri())};"
        "const b = loadImportBundle(process.argv[1]);"
        "const dates = b.snapshots.flatMap((s) => [s.observedAt, s.fetchedAt]);"
        "console.log(JSON.stringify({dates: dates.map((d) => d instanceof Date && d.toISOString()), rest: b}))"
    )
    for bundle in files.bundles:
        done = subprocess.run(
            [node, "--input-type=module", "-e", script, str(bundle.path)], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        loaded = json.loads(done.stdout)
        written = json.loads(bundle.path.read_text("utf-8"))
        assert loaded["dates"] == [s[f] for s in written["snapshots"] for f in ("observedAt", "fetchedAt")]
        assert loaded["dates"] and loaded["rest"] == written  # a Date writes itself back as the ISO string
    export_kernelindex([], tmp_path)  # nothing to publish: no bundle, no loader
    assert not (tmp_path / BUNDLE_LOADER_NAME).exists()


@pytest.mark.parametrize("order", ["given", "time"])
def test_records_prepared_once_group_as_the_manifests_do(order):
    """export_kernelindex prepares the records once for its three groupings (issue 33): the same groups, runs in
    publication_order by time, as grouping the manifests themselves; a preparation of another order is refused."""
    from kernelindex_pipeline.catalogue.kernelindex import (
        group_for_kernelindex,
        prepare_records,
        publication_order,
        submission_document,
    )
    from kernelindex_pipeline.liger.catalogue import default_catalogue

    records, _snapshots = scenarios.ci_files("full")
    records = records[::-1]  # not the time order already
    prepared = prepare_records(records, order=order)
    for runs_from in (None, "upstream", "measured"):
        direct = group_for_kernelindex(records, default_catalogue(), order=order, runs_from=runs_from)
        again = group_for_kernelindex(prepared, default_catalogue(), order=order, runs_from=runs_from)
        assert submission_document(again) == submission_document(direct)
    runs = [prepared.by_digest[d] for d in prepared.run_digests]
    assert runs == (publication_order(runs) if order == "time" else runs)
    assert len(runs) == len({digest_of(normal_form(r)) for r in records if r["kind"] == "BenchmarkRun"})
    with pytest.raises(ValueError, match="prepared in"):
        group_for_kernelindex(prepared, default_catalogue(), order="given" if order == "time" else "time")
