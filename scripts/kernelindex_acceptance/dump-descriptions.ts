// Dumps the Liger descriptions of KernelIndex's importer (kernelindex_pipeline/data/kernelindex-liger-descriptions.yaml).
import { KERNELS_BY_NAME } from "@ki/server/import/liger/kernels.ts"
import { PROVIDERS } from "@ki/server/import/liger/normalize.ts"
const kernels = Object.fromEntries([...KERNELS_BY_NAME].map(([name, spec]) => [name, { slug: spec.slug, description: spec.description }]))
const providers = Object.fromEntries(Object.entries(PROVIDERS).map(([name, entry]) => [name, entry.description]))
console.log(JSON.stringify({ kernels, providers }, null, 1))
