// Loads an ImportBundle that kernelindex-pipeline exported (kernelindex-import-bundle*.json) for KernelIndex's
// publishBundle, which takes snapshots[].observedAt/fetchedAt as Dates (its drizzle columns call toISOString);
// JSON has no dates, so they are written as ISO 8601 strings and made Dates here. Nothing else is changed.
//
//   import { loadImportBundle } from "./kernelindex-load-bundle.mjs"
//   await publishBundle(db, loadImportBundle("kernelindex-import-bundle.json"), { publish: true })
import { readFileSync } from "node:fs"

export const DATE_FIELDS = ["observedAt", "fetchedAt"] // of every snapshots[] entry

export function loadImportBundle(path) {
  const bundle = JSON.parse(readFileSync(path, "utf8"))
  for (const snapshot of bundle.snapshots ?? []) {
    for (const field of DATE_FIELDS) {
      const date = new Date(snapshot[field])
      if (Number.isNaN(date.getTime())) throw new Error(`${path}: snapshot ${snapshot.locator}: ${field} is not a date`)
      snapshot[field] = date
    }
  }
  return bundle
}
