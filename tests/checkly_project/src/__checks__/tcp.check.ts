import { TcpMonitor, TcpAssertionBuilder } from 'checkly/constructs'

// Read when the project is parsed: the runner passes --env values to the synthesis.
new TcpMonitor('line-service', {
  name: 'Line service',
  tags: ['tcp'],
  request: {
    hostname: process.env.SHOP_HOST ?? '127.0.0.1',
    port: Number(process.env.SHOP_TCP_PORT ?? 8381),
    data: 'PING\r\n',
    assertions: [TcpAssertionBuilder.responseData().contains('PONG')],
  },
})
