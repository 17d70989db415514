import { defineConfig } from 'checkly'

// The runner's own Checkly project (tests/test_checkly_project.py): its checks run against
// examples/local-app/shop.py with `testsession run --checks tests/checkly_project/checkly.config.ts
// --env ENVIRONMENT_URL=http://127.0.0.1:8380`.
export default defineConfig({
  projectName: 'Shop (testsession)',
  logicalId: 'testsession-shop',
  checks: {
    locations: ['eu-west-1'],
    tags: ['shop'],
    runtimeId: '2025.04',
    checkMatch: '**/__checks__/**/*.check.ts',
    playwrightConfig: {
      timeout: 20000,
      use: {
        baseURL: process.env.ENVIRONMENT_URL ?? 'http://127.0.0.1:8380',
        viewport: { width: 1280, height: 720 },
      },
    },
    browserChecks: {
      testMatch: '**/__checks__/**/*.spec.ts',
    },
  },
  cli: {
    runLocation: 'eu-west-1',
  },
})
