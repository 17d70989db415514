import { CheckGroupV2, AssertionBuilder } from 'checkly/constructs'

// API checks of this group get its base URL ({{GROUP_BASE_URL}}), a header and an assertion.
export const apiGroup = new CheckGroupV2('shop-api', {
  name: 'Shop API',
  tags: ['api'],
  environmentVariables: [{ key: 'SHOP_CLIENT', value: 'testsession-group' }],
  apiCheckDefaults: {
    url: '{{ENVIRONMENT_URL}}/api',
    headers: [{ key: 'X-Client', value: '{{SHOP_CLIENT}}' }],
    assertions: [AssertionBuilder.statusCode().lessThan(500)],
  },
})
