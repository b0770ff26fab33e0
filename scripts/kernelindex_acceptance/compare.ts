// KernelIndex's own Liger importer against our importer bundle of the same CSV (issue 18): both are
// published into fresh databases by KernelIndex's publishBundle, then table by table the rows are
// compared (ids and publication times left out, rows keyed by content digests and externalIds).
// Usage: node compare.mjs <admin url> <migrations dir> <csv file> <liger commit> <our import bundle>
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { pathToFileURL } from "node:url"
import { drizzle } from "drizzle-orm/postgres-js"
import { migrate } from "drizzle-orm/postgres-js/migrator"
import postgres from "postgres"
import { type ImportBundle, publishBundle } from "@ki/server/catalog/publication.ts"
import * as schema from "@ki/server/db/schema.ts"
import { parseRows } from "@ki/server/import/liger/discover.ts"
import { reconcileLiger } from "@ki/server/import/liger/reconcile.ts"
import { CSV_PATH, LIGER_REPO } from "@ki/server/import/liger/types.ts"

const [adminUrl, migrations, csvPath, commit, ourBundlePath] = process.argv.slice(2)
const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })

async function freshDatabase(name: string) {
  await admin.unsafe(`drop database if exists ${name}`)
  await admin.unsafe(`create database ${name}`)
  const client = postgres(adminUrl.replace(/\/[^/]*$/, `/${name}`), { max: 1, onnotice: () => {} })
  await migrate(drizzle(client), { migrationsFolder: migrations })
  return { client, database: drizzle(client, { schema }) }
}

// Row projections without ids or publication times; references resolved to digests / slugs.
const PROJECTIONS: Record<string, string> = {
  projects: `select slug, name, canonical_url, kind, manifest from projects`,
  operations: `select slug, semantic_digest, family, name from operations`,
  operation_manifests: `select semantic_digest, manifest from operations`,
  workloads: `select workload_digest, shape_summary, dtypes, layout_keys, manifest from workloads`,
  implementations: `select i.implementation_digest, i.slug, p.slug as project, i.source_revision, i.source_available,
    i.installable, i.license_expression, i.title, i.role from implementations i join projects p on p.id = i.project_id`,
  implementation_manifests: `select implementation_digest, manifest from implementations`,
  benchmark_runs: `select run_digest, comparison_key, protocol_key, environment_key, status, observed_at, primary_metric,
    primary_value, primary_unit, source_available, has_raw_evidence, environment_summary, manifest from benchmark_runs`,
  measurements: `select r.run_digest, m.metric, m.statistic, m.unit, m.value from measurements m join benchmark_runs r on r.id = m.run_id`,
  source_links: `select entity_kind, external_id from source_links`,
  source_snapshots: `select locator, content_digest from source_snapshots`,
  record_events: `select e.comparison_key, r.run_digest, p.run_digest as previous, e.cause from record_events e
    join benchmark_runs r on r.id = e.run_id left join benchmark_runs p on p.id = e.previous_run_id`,
}

async function rows(client: postgres.Sql) {
  const out: Record<string, Set<string>> = {}
  for (const [table, query] of Object.entries(PROJECTIONS)) {
    out[table] = new Set((await client.unsafe(query)).map((row) => JSON.stringify(row)))
  }
  return out
}

const body = readFileSync(csvPath, "utf8")
const locator = `https://raw.githubusercontent.com/${LIGER_REPO}/${commit}/${CSV_PATH}`
const parsed = parseRows(body, locator)
const kernelindex = await freshDatabase(`ki_compare_importer`)
const data = {
  commit,
  rows: parsed.rows,
  snapshots: [{
    locator, resolvedLocator: locator,
    contentDigest: `sha256:${createHash("sha256").update(body).digest("hex")}` as const,
    mediaType: "text/csv", sizeBytes: Buffer.byteLength(body), body, fetchedAt: new Date("2026-12-01T00:00:00Z"),
  }],
  issues: parsed.issues,
  driftWarnings: parsed.driftWarnings,
}
const { bundle } = await reconcileLiger(kernelindex.database, data)
await publishBundle(kernelindex.database, bundle, { publish: true })

const ours = await freshDatabase(`ki_compare_ours`)
// read with the loader the export ships beside the bundle (the snapshots' dates as Dates)
const { loadImportBundle } = await import(pathToFileURL(join(dirname(ourBundlePath), "kernelindex-load-bundle.mjs")).href)
const ourBundle = loadImportBundle(ourBundlePath) as ImportBundle
await publishBundle(ours.database, ourBundle, { publish: true })

const theirs = await rows(kernelindex.client)
const mine = await rows(ours.client)
const report: Record<string, unknown> = { csv: csvPath, commit, kernelindexRuns: bundle.runs.length, ourRuns: ourBundle.runs.length }
for (const table of Object.keys(PROJECTIONS)) {
  const onlyTheirs = [...theirs[table]].filter((row) => !mine[table].has(row))
  const onlyOurs = [...mine[table]].filter((row) => !theirs[table].has(row))
  report[table] = {
    kernelindex: theirs[table].size, ours: mine[table].size, same: theirs[table].size - onlyTheirs.length,
    onlyKernelindex: onlyTheirs.slice(0, 2).map((row) => row.slice(0, 600)),
    onlyOurs: onlyOurs.slice(0, 2).map((row) => row.slice(0, 600)),
  }
}
// Where a manifest differs between the two routes: which parts (spec or a metadata field), per table.
for (const table of ["operation_manifests", "implementation_manifests"]) {
  const byDigest = (set: Set<string>) =>
    new Map([...set].map((row) => JSON.parse(row)).map((row) => [Object.values(row)[0] as string, row.manifest]))
  const theirManifests = byDigest(theirs[table])
  const differences: Record<string, number> = {}
  for (const [digest, manifest] of byDigest(mine[table])) {
    const other = theirManifests.get(digest)
    if (!other) continue
    if (JSON.stringify(other.spec) !== JSON.stringify(manifest.spec)) differences.spec = (differences.spec ?? 0) + 1
    for (const key of new Set([...Object.keys(other.metadata), ...Object.keys(manifest.metadata)])) {
      if (JSON.stringify(other.metadata[key]) !== JSON.stringify(manifest.metadata[key]))
        differences[`metadata.${key}`] = (differences[`metadata.${key}`] ?? 0) + 1
    }
  }
  report[`${table}_differences`] = differences
}
console.log(JSON.stringify(report, null, 2))
await kernelindex.client.end()
await ours.client.end()
await admin.end()
