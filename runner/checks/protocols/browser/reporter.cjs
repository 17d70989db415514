// testsession's Playwright reporter: every test, its steps, errors and attachments as JSON: for a Playwright
// check suite one file (TESTSESSION_REPORT) at the end; for browser checks files in the folder
// TESTSESSION_REPORT_DIR. A run holds one or more checks, each a folder of the run (`c1/`, `c2/`
// ...: the first part of a test file's path). A check's file `<folder>.json` is written as soon as its
// last test ended, so a run ended early (a time limit, a stop) keeps the checks that finished; `end.json`
// (the run's status and its errors outside any test, each with the check folder of its file when it
// has one) is written at the end. Bounded: at most 200 steps per test, texts cut at 4000 characters.
const fs = require('fs');
const path = require('path');

const MAX_STEPS = 200;
const MAX_TEXT = 4000;
const cut = (s) => (typeof s === 'string' && s.length > MAX_TEXT ? s.slice(0, MAX_TEXT) + '…' : s);
const plain = (s) => cut(typeof s === 'string' ? s.replace(/\u001b\[[0-9;]*m/g, '') : s);

class TestsessionReporter {
  constructor() {
    this.tests = new Map(); this.errors = []; this.started = Date.now();
    this.root = process.cwd(); this.left = new Map(); this.written = new Set();
    this.dir = process.env.TESTSESSION_REPORT_DIR;
  }
  folderOf(file) {
    if (!file) return null;
    const rel = path.relative(this.root, file).split(path.sep);
    return rel.length > 1 && rel[0] !== '..' ? rel[0] : null;
  }
  error(e) {
    return e && {
      message: plain(e.message || e.value || ''),
      stack: plain(e.stack || ''),
      location: e.location ? `${e.location.line}:${e.location.column}` : null,
      folder: e.location ? this.folderOf(e.location.file) : null,
    };
  }
  onBegin(config, suite) {
    this.root = config.rootDir || this.root;
    for (const test of suite.allTests()) {
      const folder = this.folderOf(test.location.file);
      this.left.set(folder, (this.left.get(folder) || 0) + 1);
    }
  }
  entry(test) {
    if (!this.tests.has(test.id)) {
      // A check's script: its describe() and test() titles. A Playwright check suite (TESTSESSION_FULL_TITLES):
      // `[project] › file › describe › title`, as Playwright's list reporter names a test of many files.
      const titles = test.titlePath();
      const title = process.env.TESTSESSION_FULL_TITLES
        ? [titles[1] ? `[${titles[1]}]` : '', ...titles.slice(2)].filter(Boolean).join(' › ')
        : titles.slice(3).join(' › ');
      this.tests.set(test.id, { title: title || test.title, steps: [], running: [],
        folder: this.folderOf(test.location.file) });
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
        error: step.error ? this.error(step.error) : null });
    }
  }
  onTestEnd(test, result) {
    const e = this.entry(test);
    e.status = result.status;
    e.runs = [...(e.runs || []), result.status];  // one per run: Playwright's retries of the test
    e.expected = test.expectedStatus;
    e.durationMs = result.duration;
    e.errors = (result.errors || []).map((x) => this.error(x));
    e.attachments = (result.attachments || []).map((a) => ({
      name: a.name, contentType: a.contentType, path: a.path || null,
      body: a.name === 'testsession-events' && a.body ? a.body.toString('utf8') : null,
    }));
    e.stdout = (result.stdout || []).map((c) => plain(String(c))).slice(0, 50);
    e.stderr = (result.stderr || []).map((c) => plain(String(c))).slice(0, 50);
    e.done = true;
    const left = (this.left.get(e.folder) || 1) - 1;
    this.left.set(e.folder, left);
    if (left === 0 && this.dir) this.write(e.folder);
  }
  write(folder) {
    if (!folder || this.written.has(folder)) return;
    this.written.add(folder);
    const tests = [...this.tests.values()].filter((t) => t.folder === folder && t.done)
      .map(({ running, done, ...t }) => ({ ...t, waitingOn: running.slice(-1)[0] || null }));
    fs.writeFileSync(path.join(this.dir, `${folder}.json`), JSON.stringify({ tests }));
  }
  onError(e) { this.errors.push(this.error(e)); }
  onEnd(result) {
    const end = { status: result.status, errors: this.errors, durationMs: Date.now() - this.started };
    if (process.env.TESTSESSION_REPORT) {  // a Playwright check suite: one file with every test
      const tests = [...this.tests.values()].map(({ running, done, folder, ...t }) => ({ ...t, waitingOn: running.slice(-1)[0] || null }));
      fs.writeFileSync(process.env.TESTSESSION_REPORT, JSON.stringify({ ...end, tests }));
    }
    if (!this.dir) return;
    // A check whose tests did not all end (a run stopped by Playwright's own limits) is written as it is.
    for (const folder of this.left.keys()) this.write(folder);
    fs.writeFileSync(path.join(this.dir, 'end.json'), JSON.stringify(end));
  }
  printsToStdio() { return true; }  // so Playwright adds no reporter of its own to our output
}
module.exports = TestsessionReporter;
