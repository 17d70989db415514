import { HeartbeatMonitor } from 'checkly/constructs'

// Deactivated, as the advanced example's: a run names it as left out.
new HeartbeatMonitor('heartbeat-1', {
  name: 'Send weekly newsletter job',
  activated: false,
  period: 1,
  periodUnit: 'hours',
  grace: 30,
  graceUnit: 'minutes',
})
