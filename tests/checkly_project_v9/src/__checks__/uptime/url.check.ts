import { UrlMonitor, UrlAssertionBuilder } from 'checkly/constructs'
import { uptimeGroup } from '../utils/website-groups.check'

new UrlMonitor('health-url', {
  name: 'Health URL',
  group: uptimeGroup,
  request: {
    url: '{{ENVIRONMENT_URL}}/health',
    assertions: [UrlAssertionBuilder.statusCode().equals(200)],
  },
})
