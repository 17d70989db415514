import * as path from 'path'
import { MultiStepCheck } from 'checkly/constructs'
import { syntheticGroup } from '../utils/website-groups.check'

new MultiStepCheck('cart-multistep', {
  name: 'Cart multi-step',
  group: syntheticGroup,
  code: { entrypoint: path.join(__dirname, '03-cart.multistep.ts') },
})
