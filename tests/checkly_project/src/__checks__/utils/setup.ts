import { shopToken } from './auth'

// Production's setup script: it may change `request` before it is sent.
const token = await shopToken()
request.headers['Authorization'] = `Bearer ${token}`
