import { test, expect } from '@playwright/test';

test('the login page loads', async ({ page }) => {
  await page.goto('/login');
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible();
});

test('shopper signs in', async ({ page }) => {
  await page.goto('/login');
  await page.getByLabel('Username').fill('shopper');
  await page.getByLabel('Password').fill(process.env.SHOP_PASSWORD ?? '');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Welcome, shopper', { timeout: 3000 });
});
