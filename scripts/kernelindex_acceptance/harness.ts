// Runs KernelIndex's own publication code, unmodified, on our exports (issue 18). Bundled by esbuild
// with `@ki` aliased to a KernelIndex checkout's apps/web/src (see run.sh); talks to the PostgreSQL
// that run.sh started. Usage: node harness.mjs <database url> <migrations dir> <scenario dir>...
// Each scenario dir holds kernelindex-submission.yaml and kernelindex-import-bundle.json; each route is
// published into a fresh database, twice (idempotency), and summarised as JSON on stdout.
import { existsSync, readFileSync } from "node:fs"
import { pathToFileURL } from "node:url"
import { drizzle } from "drizzle-orm/postgres-js"
import { migrate } from "drizzle-orm/postgres-js/migrator"
import postgres from "postgres"
import { publishBundle, type ImportBundle } from "@ki/server/catalog/publication.ts"
import { bundleFromSubmission } from "@ki/server/catalog/submissions.ts"
import * as schema from "@ki/server/db/schema.ts"
import { rankCohort } from "@ki/server/policy/ranking.ts"
import { evidenceLevel } from "@ki/server/policy/trust.ts"

const [adminUrl, migrations, ...scenarios] = process.argv.slice(2)
const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
let databases = 0

async function freshDatabase() {
  const name = `ki_${process.pid}_${databases++}`
  await admin.unsafe(`create database ${name}`)
  const url = adminUrl.replace(/\/[^/]*$/, `/${name}`)
  const client = postgres(url, { max: 1, onnotice: () => {} })
  const database = drizzle(client, { schema })
  await migrate(drizzle(client), { migrationsFolder: migrations })
  return { client, database }
}

async function summary(client: postgres.Sql) {
  const count = async (table: string) => Number((await client.unsafe(`select count(*) as n from ${table}`))[0].n)
  const runs = await client.unsafe(
    `select source_available, installable, has_raw_evidence, reproduced_by_kernelindex, independent_replication_count from benchmark_runs`,
  )
  const tiers: Record<string, number> = {}
  for (const run of runs) {
    const level = evidenceLevel({
      reproducedByKernelindex: run.reproduced_by_kernelindex,
      independentReplicationCount: run.independent_replication_count,
      sourceAvailable: run.source_available,
      installable: run.installable,
      hasRawEvidence: run.has_raw_evidence,
      identityComplete: true,
    })
    tiers[level] = (tiers[level] ?? 0) + 1
  }
  const cohorts = await client.unsafe(
    `select count(distinct comparison_key) as cohorts, count(distinct environment_key) as environments from benchmark_runs`,
  )
  return {
    runs: await count("benchmark_runs"),
    workloads: await count("workloads"),
    implementations: await count("implementations"),
    operations: await count("operations"),
    projects: await count("projects"),
    measurements: await count("measurements"),
    artifacts: await count("artifacts"),
    sourceSnapshots: await count("source_snapshots"),
    sourceLinks: await count("source_links"),
    recordEvents: await count("record_events"),
    cohorts: Number(cohorts[0].cohorts),
    environments: Number(cohorts[0].environments),
    trustTiers: tiers,
  }
}

// How KernelIndex ranks the published runs (ranking-v1, as its reads do): per cohort, `source_native` when any
// run has sourceNative, else `strict_exact`; ranks, tied runs, and strictly ordered neighbours whose
// confidence95 intervals overlap.
async function ranking(client: postgres.Sql) {
  const rows = await client.unsafe(
    `select id, comparison_key, primary_value, uncertainty_low, uncertainty_high, observed_at, source_native
     from benchmark_runs where primary_value is not null and status = 'passed'`,
  )
  const cohorts = new Map<string, typeof rows>()
  for (const row of rows) cohorts.set(row.comparison_key, [...(cohorts.get(row.comparison_key) ?? []), row])
  const out: Record<string, { cohorts: number; runs: number; ranks: number; tiedRuns: number; withInterval: number; overlappingStrictNeighbours: number }> = {}
  for (const cohort of cohorts.values()) {
    const profile = cohort.some((row) => row.source_native) ? "source_native" : "strict_exact"
    const interval = (row: (typeof rows)[number]) =>
      row.uncertainty_low !== null && row.uncertainty_high !== null ? { low: Number(row.uncertainty_low), high: Number(row.uncertainty_high) } : null
    const byId = new Map(cohort.map((row) => [row.id, row]))
    const ranked = rankCohort(
      cohort.map((row) => ({ id: row.id, value: Number(row.primary_value), interval: interval(row), evidence: "reported", observedAt: new Date(row.observed_at) })),
      profile,
    )
    const entry = (out[profile] ??= { cohorts: 0, runs: 0, ranks: 0, tiedRuns: 0, withInterval: 0, overlappingStrictNeighbours: 0 })
    entry.cohorts += 1
    entry.runs += ranked.length
    entry.ranks += new Set(ranked.map((r) => r.rank)).size
    entry.tiedRuns += ranked.filter((r) => r.tiedWithPrevious).length
    entry.withInterval += cohort.filter((row) => interval(row) !== null).length
    for (let i = 1; i < ranked.length; i++) {
      if (ranked[i].rank === ranked[i - 1].rank) continue
      const a = interval(byId.get(ranked[i - 1].id)), b = interval(byId.get(ranked[i].id))
      if (a && b && a.high >= b.low && b.high >= a.low) entry.overlappingStrictNeighbours += 1
    }
  }
  return out
}

async function route(name: string, bundles: () => Promise<ImportBundle[] | { issues: string[] }>) {
  const made = await bundles()
  if ("issues" in made) return { route: name, accepted: false, issues: made.issues.length, firstIssues: made.issues.slice(0, 5) }
  const { client, database } = await freshDatabase()
  try {
    const published = []
    for (const bundle of made) published.push((await publishBundle(database, bundle, { publish: true })).counts)
    let republishedRunsInserted = 0
    for (const bundle of made) republishedRunsInserted += (await publishBundle(database, bundle, { publish: true })).counts.runs.inserted
    return {
      route: name,
      accepted: true,
      sources: made.map((bundle) => bundle.source.slug),
      published,
      republishedRunsInserted,
      ...(await summary(client)),
      ranking: await ranking(client),
    }
  } catch (error) {
    return { route: name, accepted: false, error: (error as Error).message }
  } finally {
    await client.end()
  }
}

// The importer route publishes every bundle of the scenario (Liger's rows, our sweeps) into one database, each
// read with the loader the export ships beside it (kernelindex-load-bundle.mjs: the snapshots' dates as Dates).
async function importerBundles(scenario: string): Promise<ImportBundle[]> {
  const { loadImportBundle } = await import(pathToFileURL(`${scenario}/kernelindex-load-bundle.mjs`).href)
  return ["kernelindex-import-bundle.json", "kernelindex-import-bundle.sweeps.json"]
    .filter((name) => existsSync(`${scenario}/${name}`))
    .map((name) => loadImportBundle(`${scenario}/${name}`) as ImportBundle)
}

const results = []
for (const scenario of scenarios) {
  const text = readFileSync(`${scenario}/kernelindex-submission.yaml`, "utf8")
  results.push({
    scenario,
    submission: await route("submission", async () => {
      const { bundle, report } = bundleFromSubmission(text)
      return report.valid ? [bundle] : { issues: report.issues }
    }),
    importer: await route("importer", () => importerBundles(scenario)),
  })
}
console.log(JSON.stringify(results, null, 2))
await admin.end()
