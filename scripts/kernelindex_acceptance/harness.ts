// Runs KernelIndex's own publication code, unmodified, on our exports (issue 18). Bundled by esbuild
// with `@ki` aliased to a KernelIndex checkout's apps/web/src (see run.sh); talks to the PostgreSQL
// that run.sh started. Usage: node harness.mjs <database url> <migrations dir> <scenario dir>...
// Each scenario dir holds kernelindex-submission.yaml and kernelindex-import-bundle.json; each route is
// published into a fresh database, twice (idempotency), and summarised as JSON on stdout.
import { existsSync, readFileSync } from "node:fs"
import { drizzle } from "drizzle-orm/postgres-js"
import { migrate } from "drizzle-orm/postgres-js/migrator"
import postgres from "postgres"
import { publishBundle, type ImportBundle } from "@ki/server/catalog/publication.ts"
import { bundleFromSubmission } from "@ki/server/catalog/submissions.ts"
import * as schema from "@ki/server/db/schema.ts"
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

function reviveDates(bundle: ImportBundle): ImportBundle {
  for (const snapshot of bundle.snapshots ?? []) {
    snapshot.observedAt = new Date(snapshot.observedAt as unknown as string)
    snapshot.fetchedAt = new Date(snapshot.fetchedAt as unknown as string)
  }
  return bundle
}

async function route(name: string, bundles: () => ImportBundle[] | { issues: string[] }) {
  const made = bundles()
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
    }
  } catch (error) {
    return { route: name, accepted: false, error: (error as Error).message }
  } finally {
    await client.end()
  }
}

// The importer route publishes every bundle of the scenario (Liger's rows, our sweeps) into one database.
function importerBundles(scenario: string): ImportBundle[] {
  return ["kernelindex-import-bundle.json", "kernelindex-import-bundle.sweeps.json"]
    .filter((name) => existsSync(`${scenario}/${name}`))
    .map((name) => reviveDates(JSON.parse(readFileSync(`${scenario}/${name}`, "utf8"))))
}

const results = []
for (const scenario of scenarios) {
  const text = readFileSync(`${scenario}/kernelindex-submission.yaml`, "utf8")
  results.push({
    scenario,
    submission: await route("submission", () => {
      const { bundle, report } = bundleFromSubmission(text)
      return report.valid ? [bundle] : { issues: report.issues }
    }),
    importer: await route("importer", () => importerBundles(scenario)),
  })
}
console.log(JSON.stringify(results, null, 2))
await admin.end()
