import { test, expect } from '@playwright/test'

// A browser check: playwrightConfig's use.baseURL (checkly.config.ts) is the build.
test('health page says ok', async ({ page }) => {
  const response = await page.goto('/health')
  expect(response?.status()).toBe(200)
})
