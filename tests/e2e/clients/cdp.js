// Two CDP clients drive the session's browser through the port-forward, the
// way users' own tools do: Playwright's connectOverCDP and Puppeteer's
// connect, each opening a page of its own. Prints one JSON line.
//   node cdp.js <http endpoint> <fixture url>
'use strict';
const { chromium } = require('playwright-core');
const puppeteer = require('puppeteer-core');

const [endpoint, fixtureUrl] = process.argv.slice(2);

(async () => {
  const result = {};
  try {
    const browser = await chromium.connectOverCDP(endpoint, { timeout: 30000 });
    const context = browser.contexts()[0];
    result.playwrightSaw = context.pages().map((p) => p.url());
    const page = await context.newPage();
    await page.goto(fixtureUrl + '#playwright');
    result.playwrightTitle = await page.title();

    const pptr = await puppeteer.connect({ browserURL: endpoint, protocolTimeout: 30000 });
    result.puppeteerSaw = (await pptr.pages()).map((p) => p.url());
    const other = await pptr.newPage();
    await other.goto(fixtureUrl + '#puppeteer');
    result.puppeteerTitle = await other.title();
    // Leave both pages open for the agent to see; only disconnect.
    await pptr.disconnect();
  } catch (e) {
    result.error = String(e && e.stack || e);
  }
  console.log(JSON.stringify(result));
  process.exit(0);
})();
