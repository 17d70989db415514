// What the check's script gets for `require('@playwright/test')` / `import ... from '@playwright/test'`:
// Playwright's own exports, with a `context` fixture that keeps the console errors, page errors and
// failed requests of every page, and a `request` fixture (a MULTI_STEP check's API calls) that keeps
// its answers of 400 and more and its failed calls (attached to the test as `testsession-events`, at
// most 100 each): what failed is named by them (a 503 of GET /api/cart), not only by the expect.
// Each test's output folder is named from its spec's folder and a counter, not from its title as
// Playwright names it: a title can be made of a secret (`test('types ' + process.env.TOKEN)`), and no
// secret may reach a path (batch.py then names the folder test-<n>; folders.py).
const path = require('path');
const base = require('@playwright/test');

const MAX_EVENTS = 100;
const METHODS = ['fetch', 'get', 'post', 'put', 'patch', 'delete', 'head'];
let made = 0;  // tests this worker process ran
const test = base.test.extend({
  testsessionOutputDir: [async ({}, use, testInfo) => {
    const top = path.relative(testInfo.project.testDir, testInfo.file).split(path.sep)[0];
    const retry = testInfo.retry ? `-retry${testInfo.retry}` : '';
    testInfo.outputDir = path.join(testInfo.project.outputDir, `${top}-w${testInfo.workerIndex}-${++made}${retry}`);
    await use();
  }, { auto: true }],
  request: async ({ request }, use, testInfo) => {
    const events = [];
    const add = (event) => { if (events.length < MAX_EVENTS) events.push(event); };
    const watched = new Proxy(request, {
      get (target, name) {
        const value = Reflect.get(target, name, target);
        if (typeof value !== 'function') return value;
        if (!METHODS.includes(name)) return value.bind(target);
        return async (url, options) => {
          const method = name === 'fetch' ? ((options && options.method) || 'GET').toUpperCase() : name.toUpperCase();
          const shown = typeof url === 'string' ? url : (url && typeof url.url === 'function' ? url.url() : String(url));
          try {
            const response = await value.call(target, url, options);
            if (response.status() >= 400) add({ kind: 'response', method, url: response.url(), status: response.status(), text: `HTTP ${response.status()}` });
            return response;
          } catch (e) {
            add({ kind: 'requestfailed', method, url: shown, text: String(e && e.message || e).split('\n')[0] });
            throw e;
          }
        };
      },
    });
    await use(watched);
    await testInfo.attach('testsession-events', { body: JSON.stringify(events), contentType: 'application/json' });
  },
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
