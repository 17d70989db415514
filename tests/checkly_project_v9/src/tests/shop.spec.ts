import { test, expect } from '@playwright/test'

// The Playwright check suite's tests: one passes, one needs a retry (the first try fails on purpose,
// Playwright's own retries decide), against the build at use.baseURL.
test('health says ok', async ({ request }) => {
  const response = await request.get('/health')
  expect(response.status()).toBe(200)
})

test('login page has a form', async ({ page }, testInfo) => {
  await page.goto('/login')
  expect(testInfo.retry, 'the first try fails on purpose: Playwright retries it').toBeGreaterThan(0)
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible()
})
