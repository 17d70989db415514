import { test, expect } from '@playwright/test';

// The check's variables are process.env; nothing else of the runner's environment (a CI job's token).
test('sees its variables, not the runner\'s', async () => {
  expect(process.env.SHOP_URL).toMatch(/^http:\/\/127\.0\.0\.1:/);
  expect(process.env.GITHUB_TOKEN).toBeUndefined();
});
