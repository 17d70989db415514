import { GrpcMonitor, GrpcAssertionBuilder } from 'checkly/constructs'
import { uptimeGroup } from '../utils/website-groups.check'

// The build's gRPC health service (grpc.health.v1), plain text, on the port the job exports.
new GrpcMonitor('grpc-health', {
  name: 'gRPC health',
  group: uptimeGroup,
  degradedResponseTime: 2000,
  maxResponseTime: 5000,
  request: {
    url: '127.0.0.1',
    port: Number(process.env.GRPC_PORT),
    grpcConfig: { mode: 'HEALTH', tls: false },
    assertions: [
      GrpcAssertionBuilder.healthCheckStatus().equals('SERVING'),
      GrpcAssertionBuilder.responseTime().lessThan(1000),
    ],
  },
})
