import { defineConfig } from 'checkly'
import { RetryStrategyBuilder } from 'checkly/constructs'

// The runner's own Checkly project in the layout of the checkly CLI's "advanced project" example
// (tests/test_checkly_project_v9.py): a group per folder, browser and multi-step checks, uptime
// monitors (TCP, gRPC, SSL, URL, a deactivated heartbeat) and a Playwright check suite whose config
// has a Chromium and a Firefox project. Its constructs read the job's environment when parsed.
export default defineConfig({
  projectName: 'Shop advanced (testsession)',
  logicalId: 'testsession-advanced',
  checks: {
    frequency: 10,
    locations: ['us-east-1', 'eu-central-1'],
    tags: ['advanced'],
    runtimeId: '2025.04',
    retryStrategy: RetryStrategyBuilder.noRetries(),
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
    playwrightConfigPath: './playwright.config.ts',
    playwrightChecks: [
      {
        logicalId: 'playwright-check-suite',
        name: 'Playwright Check Suite',
      },
    ],
  },
  cli: {
    runLocation: 'eu-central-1',
    retries: 0,
  },
})
