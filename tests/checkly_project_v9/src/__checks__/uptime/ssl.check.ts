import { SslMonitor, SslAssertionBuilder } from 'checkly/constructs'
import { uptimeGroup } from '../utils/website-groups.check'

// The build's TLS certificate, on the port the job exports.
new SslMonitor('build-ssl', {
  name: 'Build certificate',
  group: uptimeGroup,
  request: {
    hostname: '127.0.0.1',
    port: Number(process.env.SSL_PORT),
    sslConfig: { alertDaysBeforeExpiry: 30 },
    assertions: [
      SslAssertionBuilder.certificate('daysUntilExpiry').greaterThan(30),
      SslAssertionBuilder.connection('hostnameVerified').equals(true),
    ],
  },
})
