// A Playwright project of the runner's own tests (tests/test_playwright_suite.py): a PLAYWRIGHT check
// runs it where it is, against examples/local-app/shop.py. Its node_modules is linked in by the test.
import { defineConfig, devices } from '@playwright/test';

export default defineConfig({
  testDir: './tests',
  retries: 0,
  workers: 1,
  reporter: 'html', // replaced by testsession's reporter
  use: { baseURL: process.env.SHOP_URL },
  projects: [{ name: 'chromium', use: { ...devices['Desktop Chrome'] } }],
});
