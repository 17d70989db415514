import { defineConfig, devices } from '@playwright/test'

// The Playwright check suite's own config: two browsers, as the advanced example's.
export default defineConfig({
  timeout: 20000,
  retries: 1,
  use: {
    baseURL: process.env.ENVIRONMENT_URL ?? 'http://127.0.0.1:8380',
  },
  projects: [
    { name: 'Chromium', testDir: './src/tests/', use: { ...devices['Desktop Chrome'] } },
    { name: 'Firefox', testDir: './src/tests/', use: { ...devices['Desktop Firefox'] } },
  ],
})
