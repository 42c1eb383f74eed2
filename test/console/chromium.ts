import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';

/** Debian's Chromium (apt-get install -y chromium), or SVC_CHROMIUM; puppeteer-core downloads nothing. */
export const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';
export const SHOTS = fileURLToPath(new URL('../../test-output/console/', import.meta.url));

/**
 * Whether the browser suites can run here. When Chromium is missing, registers the one test saying
 * so: failed under CI (which installs it, so the suite must run there), skipped elsewhere.
 */
export function chromiumHere(suite: string): boolean {
  if (existsSync(CHROMIUM)) {
    mkdirSync(SHOTS, { recursive: true });
    return true;
  }
  const message = `Chromium is not installed at ${CHROMIUM} (apt-get install -y chromium): ${suite} cannot run`;
  if (process.env.CI) test(suite, (t) => t.fail(message));
  else test.skip(message, () => undefined);
  return false;
}

/** A headless Chromium whose page has followed a console login link (`POST /auth/console/links`) and shows the signed-in console. */
export async function signedInPage(loginUrl: string): Promise<{ browser: Browser; page: Page }> {
  const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  await page.goto(loginUrl);
  await page.waitForSelector('.top .who');
  return { browser, page };
}

/** A full-page screenshot into test-output/console/<name>.png (docs/console.md shows some). */
export const screenshot = (page: Page, name: string) => page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });
