import { CheckGroupV2, Frequency } from 'checkly/constructs'

// A group per folder, as the advanced example's: synthetics and uptime.
export const syntheticGroup = new CheckGroupV2('check-group-synthetics', {
  name: 'Synthetic Monitors Group',
  activated: true,
  frequency: Frequency.EVERY_15M,
  tags: ['synthetics'],
  environmentVariables: [{ key: 'SHOP_CLIENT', value: 'testsession-v9' }],
})

export const uptimeGroup = new CheckGroupV2('check-group-uptime', {
  name: 'Uptime Monitors Group',
  frequency: Frequency.EVERY_15M,
  tags: ['uptime'],
})
