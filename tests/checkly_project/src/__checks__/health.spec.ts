import { test, expect } from '@playwright/test'

// A browser check: playwrightConfig's use.baseURL (the config above) is the build.
test('health page says ok', async ({ page }) => {
  const response = await page.goto('/health')
  expect(response?.status()).toBe(200)
  await expect(page.locator('body')).toContainText('"status": "ok"')
})
