import { test, expect } from '@playwright/test'

// A multi-step API check: the cart answers 503 on the broken build.
test('cart answers', async ({ request }) => {
  const base = process.env.ENVIRONMENT_URL
  const products = await request.get(`${base}/api/products`, {
    headers: { Authorization: `Bearer ${process.env.SHOP_TOKEN}` },
  })
  expect(products.status()).toBe(200)
  const cart = await request.get(`${base}/api/cart`)
  expect(cart.status()).toBe(200)
})
