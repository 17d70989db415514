// What the check's script gets for `require('@playwright/test')` / `import ... from '@playwright/test'`:
// Playwright's own exports, with a `context` fixture that keeps the console errors, page errors and
// failed requests of every page (attached to the test as `testsession-events`, at most 100 each).
// Each test's output folder is named from its spec's folder and a counter, not from its title as
// Playwright names it: a title can be made of a secret (`test('types ' + process.env.TOKEN)`), and no
// secret may reach a path (batch.py then names the folder test-<n>; folders.py).
const path = require('path');
const base = require('@playwright/test');

const MAX_EVENTS = 100;
let made = 0;  // tests this worker process ran
const test = base.test.extend({
  testsessionOutputDir: [async ({}, use, testInfo) => {
    const top = path.relative(testInfo.project.testDir, testInfo.file).split(path.sep)[0];
    const retry = testInfo.retry ? `-retry${testInfo.retry}` : '';
    testInfo.outputDir = path.join(testInfo.project.outputDir, `${top}-w${testInfo.workerIndex}-${++made}${retry}`);
    await use();
  }, { auto: true }],
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
