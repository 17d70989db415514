// testsession's settings over a Playwright check suite's own config (docs/checks.md, "Playwright check
// suites"), from TESTSESSION_PLAYWRIGHT (JSON): its reporter (it reads the result), its output folder
// (the evidence under the reports folder), headless, the machine's Chromium by launchOptions.executablePath
// for every Chromium project, the trace of a failed test kept; a screenshot on failure and 2 retries
// (production's default) unless the config says otherwise. A project whose browser does not run here
// (`skip`: Firefox or WebKit without Playwright's own build) is left out; the check names it and fails.
// Everything else is the project's own.
module.exports = function overlay(config) {
  const ours = JSON.parse(process.env.TESTSESSION_PLAYWRIGHT || '{}');
  const base = (config && config.default) || config || {};
  const browserOf = (use) => (use && (use.browserName || use.defaultBrowserType)) || undefined;
  const topBrowser = browserOf(base.use) || 'chromium';
  const launch = (theirs) => ({
    ...(theirs || {}),
    executablePath: ours.executablePath,
    args: [...((theirs && theirs.args) || []), ...ours.args],
  });
  const use = { ...(base.use || {}), headless: true, trace: ours.trace };
  if (use.screenshot === undefined) use.screenshot = ours.screenshot;
  if (topBrowser === 'chromium') use.launchOptions = launch(use.launchOptions);
  const skip = new Set(ours.skip || []);
  const projects = Array.isArray(base.projects)
    ? base.projects.filter((project) => !skip.has(browserOf(project.use) || topBrowser)).map((project) => {
      const own = { ...(project.use || {}), headless: true, trace: ours.trace };
      if ((browserOf(project.use) || topBrowser) === 'chromium') {
        own.launchOptions = launch(own.launchOptions || (base.use && base.use.launchOptions));
      }
      const { outputDir, ...rest } = project;  // every project's files go to our output folder
      return { ...rest, use: own };
    })
    : base.projects;
  return {
    ...base,
    reporter: [[ours.reporter]],
    outputDir: ours.outputDir,
    preserveOutput: 'always',
    retries: base.retries === undefined ? ours.retries : base.retries,
    use,
    projects,
  };
};
