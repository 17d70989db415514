// Runs one API check setup or teardown script as production's runtime does
// (detect/synthetic-monitoring/api-checks/setup-and-teardown.mdx): the script is wrapped in an async
// function, sees `request` (setup may change it) and, in teardown, `response` (its body may be
// changed), and process.env holds the check's variables. Input: a JSON file named by the first argument. Output:
// one JSON document written to input.resultFile (the script's own console output stays on stdout).
import { createRequire } from 'node:module'
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'

const input = JSON.parse(readFileSync(process.argv[2], 'utf8'))
const result = { ok: false, error: null }

function finish () {
  result.request = globalThis.request
  result.response = globalThis.response ?? null
  result.env = { ...process.env }
  writeFileSync(input.resultFile, JSON.stringify(result))
}

for (const key of Object.keys(process.env)) delete process.env[key]
Object.assign(process.env, input.env)
globalThis.request = input.request
if (input.response) globalThis.response = input.response

try {
  const entry = path.join(input.root, input.entry)
  let jiti = null
  if (input.projectDir) {
    try {
      // jiti: the TypeScript loader the project's `checkly` itself uses (its dependency).
      const fromProject = createRequire(path.join(input.projectDir, 'package.json'))
      let where
      try {
        where = fromProject.resolve('jiti')
      } catch {
        where = createRequire(fromProject.resolve('checkly')).resolve('jiti')
      }
      const { createJiti } = await import(where)
      jiti = createJiti(entry, { moduleCache: false, fsCache: false, interopDefault: true })
    } catch (err) {
      jiti = null
    }
  }
  if (jiti) {
    // TypeScript, import/require between the project's files, top-level await.
    await jiti.import(entry)
  } else {
    // A plain script (a checks file's localSetupScript): production's async wrapper and require.
    const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor
    const require = createRequire(entry)
    await new AsyncFunction('request', 'response', 'require', readFileSync(entry, 'utf8'))(
      globalThis.request, globalThis.response, require)
  }
  result.ok = true
} catch (err) {
  result.error = String(err && err.stack ? `${err.name}: ${err.message}` : err).slice(0, 2000)
}
finish()
