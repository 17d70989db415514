// What the check's script gets for `require('@playwright/test')` / `import ... from '@playwright/test'`:
// Playwright's own exports, with a `context` fixture that keeps the console errors, page errors and
// failed requests of every page (attached to the test as `testsession-events`, at most 100 each).
const base = require('@playwright/test');

const MAX_EVENTS = 100;
const test = base.test.extend({
  context: async ({ context }, use, testInfo) => {
    const events = [];
    const add = (event) => { if (events.length < MAX_EVENTS) events.push(event); };
    const watch = (page) => {
      page.on('console', (m) => { if (m.type() === 'error') add({ kind: 'console', text: m.text(), url: page.url() }); });
      page.on('pageerror', (e) => add({ kind: 'pageerror', text: String(e && e.message || e), url: page.url() }));
    };
    context.pages().forEach(watch);
    context.on('page', watch);
    context.on('requestfailed', (r) => add({ kind: 'requestfailed', method: r.method(), url: r.url(),
      text: (r.failure() && r.failure().errorText) || 'failed' }));
    context.on('response', (r) => { if (r.status() >= 400) add({ kind: 'response', method: r.request().method(), url: r.url(), status: r.status(), text: `HTTP ${r.status()}` }); });
    await use(context);
    await testInfo.attach('testsession-events', { body: JSON.stringify(events), contentType: 'application/json' });
  },
});
module.exports = { ...base, test, default: test };
