import { TcpMonitor, TcpAssertionBuilder } from 'checkly/constructs'
import { uptimeGroup } from '../utils/website-groups.check'

// Read from the job's environment when the project is parsed (exported in the shell, not --env).
new TcpMonitor('line-service', {
  name: 'Line service',
  group: uptimeGroup,
  request: {
    hostname: '127.0.0.1',
    port: Number(process.env.LINE_PORT),
    data: 'PING\r\n',
    assertions: [TcpAssertionBuilder.responseData().contains('PONG')],
  },
})
