// Imported by setup.ts: a file the setup script shares with the project (sharedFiles).
export async function shopToken (): Promise<string> {
  const token: string = process.env.SHOP_TOKEN ?? ''
  if (!token) {
    throw new Error('SHOP_TOKEN is not set')
  }
  return token
}
