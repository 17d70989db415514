import * as path from 'path'
import { ApiCheck, AssertionBuilder } from 'checkly/constructs'
import { apiGroup } from './utils/group.check'

new ApiCheck('products-api', {
  name: 'Products API',
  group: apiGroup,
  setupScript: { entrypoint: path.join(__dirname, 'utils/setup.ts') },
  request: {
    method: 'GET',
    url: '{{GROUP_BASE_URL}}/products',
    assertions: [
      AssertionBuilder.statusCode().equals(200),
      AssertionBuilder.jsonBody('$.total').equals(2),
    ],
  },
})

// Fails against the good build on purpose: the shop sells 2 products, not 3.
new ApiCheck('catalogue-size', {
  name: 'Catalogue has 3 products',
  group: apiGroup,
  setupScript: { entrypoint: path.join(__dirname, 'utils/setup.ts') },
  request: {
    method: 'GET',
    url: '{{GROUP_BASE_URL}}/products',
    assertions: [AssertionBuilder.jsonBody('$.total').equals(3)],
  },
})

new ApiCheck('cart-api', {
  name: 'Cart API',
  group: apiGroup,
  tags: ['cart'],
  request: {
    method: 'GET',
    url: '{{GROUP_BASE_URL}}/cart',
    assertions: [AssertionBuilder.jsonBody('$.currency').equals('EUR')],
  },
})
