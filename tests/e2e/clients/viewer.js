// A human at the viewer, played by Debian's headless Chromium driven with
// playwright-core: opens the dashboard through the port-forward, picks the
// session's tab, reads the centre pixel of the live screencast, turns on
// interactive mode and clicks the screencast, then reads the pixel again.
// Prints one JSON line; screenshots go to the artifact directory.
//   node viewer.js <dashboard url> <tab title> <artifact dir>
'use strict';
const { chromium } = require('playwright-core');
const path = require('path');

const [url, tabTitle, artifacts] = process.argv.slice(2);

async function centrePixel(page) {
  return page.evaluate(() => {
    const img = document.getElementById('display');
    const canvas = document.createElement('canvas');
    canvas.width = img.naturalWidth;
    canvas.height = img.naturalHeight;
    const g = canvas.getContext('2d');
    g.drawImage(img, 0, 0);
    return Array.from(g.getImageData(canvas.width >> 1, canvas.height >> 1, 1, 1).data.slice(0, 3));
  });
}

async function waitForColour(page, wanted, timeoutMs) {
  const near = (a, b) => a.every((v, i) => Math.abs(v - b[i]) <= 24);
  const deadline = Date.now() + timeoutMs;
  let seen = await centrePixel(page);
  while (!near(seen, wanted) && Date.now() < deadline) {
    await page.waitForTimeout(250);
    seen = await centrePixel(page);
  }
  return seen;
}

(async () => {
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--disable-background-networking', '--disable-component-update'],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const result = {};
  try {
    await page.goto(url);
    result.dashboardTitle = await page.title();
    await page.getByText(tabTitle, { exact: true }).click({ timeout: 30000 });
    const display = page.locator('#display');
    await display.waitFor({ state: 'visible', timeout: 30000 });
    await page.waitForFunction(() => {
      const img = document.getElementById('display');
      return img && img.complete && img.naturalWidth > 0;
    }, null, { timeout: 30000 });
    result.before = await waitForColour(page, [255, 0, 170], 10000);
    await page.screenshot({ path: path.join(artifacts, 'viewer-before.png') });
    await page.getByTitle('Enable interactive mode').click();
    await display.click();
    result.after = await waitForColour(page, [0, 170, 255], 10000);
    await page.screenshot({ path: path.join(artifacts, 'viewer-after.png') });
  } catch (e) {
    result.error = String(e && e.stack || e);
    await page.screenshot({ path: path.join(artifacts, 'viewer-failed.png') }).catch(() => {});
  }
  console.log(JSON.stringify(result));
  await browser.close();
})();
