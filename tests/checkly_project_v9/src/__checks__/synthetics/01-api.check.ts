import * as path from 'path'
import { ApiCheck, AssertionBuilder } from 'checkly/constructs'
import { syntheticGroup } from '../utils/website-groups.check'

new ApiCheck('products-api', {
  name: 'Products API',
  group: syntheticGroup,
  setupScript: { entrypoint: path.join(__dirname, '../utils/setup.ts') },
  request: {
    method: 'GET',
    url: '{{ENVIRONMENT_URL}}/api/products',
    assertions: [
      AssertionBuilder.statusCode().equals(200),
      AssertionBuilder.jsonBody('$.total').equals(2),
    ],
  },
})
