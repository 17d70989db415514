// testsession's Playwright reporter: every test, its steps, errors and attachments as one JSON file
// (the path in TESTSESSION_REPORT). Bounded: at most 200 steps per test, texts cut at 4000 characters.
const fs = require('fs');

const MAX_STEPS = 200;
const MAX_TEXT = 4000;
const cut = (s) => (typeof s === 'string' && s.length > MAX_TEXT ? s.slice(0, MAX_TEXT) + '…' : s);
const plain = (s) => cut(typeof s === 'string' ? s.replace(/\u001b\[[0-9;]*m/g, '') : s);
const error = (e) => e && {
  message: plain(e.message || e.value || ''),
  stack: plain(e.stack || ''),
  location: e.location ? `${e.location.line}:${e.location.column}` : null,
};

class TestsessionReporter {
  constructor() { this.tests = new Map(); this.errors = []; this.started = Date.now(); }
  entry(test) {
    if (!this.tests.has(test.id)) {
      // A check's script: its describe() and test() titles. A Playwright check suite (TESTSESSION_FULL_TITLES):
      // `[project] › file › describe › title`, as Playwright's list reporter names a test of many files.
      const path = test.titlePath();
      const title = process.env.TESTSESSION_FULL_TITLES
        ? [path[1] ? `[${path[1]}]` : '', ...path.slice(2)].filter(Boolean).join(' › ')
        : path.slice(3).join(' › ');
      this.tests.set(test.id, { title: title || test.title, steps: [], running: [] });
    }
    return this.tests.get(test.id);
  }
  onStepBegin(test, result, step) {
    const e = this.entry(test);
    if (['test.step', 'pw:api', 'expect'].includes(step.category)) e.running.push(step.title);
  }
  onStepEnd(test, result, step) {
    if (!['test.step', 'pw:api', 'expect'].includes(step.category)) return;
    const e = this.entry(test);
    const i = e.running.lastIndexOf(step.title);
    if (i >= 0) e.running.splice(i, 1);
    if (e.steps.length < MAX_STEPS) {
      e.steps.push({ title: plain(step.title), category: step.category, durationMs: step.duration,
        error: step.error ? error(step.error) : null });
    }
  }
  onTestEnd(test, result) {
    const e = this.entry(test);
    e.status = result.status;
    e.expected = test.expectedStatus;
    e.durationMs = result.duration;
    e.errors = (result.errors || []).map(error);
    e.attachments = (result.attachments || []).map((a) => ({
      name: a.name, contentType: a.contentType, path: a.path || null,
      body: a.name === 'testsession-events' && a.body ? a.body.toString('utf8') : null,
    }));
    e.stdout = (result.stdout || []).map((c) => plain(String(c))).slice(0, 50);
    e.stderr = (result.stderr || []).map((c) => plain(String(c))).slice(0, 50);
  }
  onError(e) { this.errors.push(error(e)); }
  onEnd(result) {
    const tests = [...this.tests.values()].map(({ running, ...t }) => ({ ...t, waitingOn: running.slice(-1)[0] || null }));
    fs.writeFileSync(process.env.TESTSESSION_REPORT, JSON.stringify({
      status: result.status, tests, errors: this.errors, durationMs: Date.now() - this.started,
    }));
  }
  printsToStdio() { return true; }  // so Playwright adds no reporter of its own to our output
}
module.exports = TestsessionReporter;
