/**
 * The project's environments page in a real browser (Debian's Chromium, headless, puppeteer-core),
 * with the recording deployer of the API tests: health and the current release, one environment's
 * deploy history, a deploy's log, a rollback started from the page, and a deploy to a protected
 * environment approved and another rejected from the page. Screenshots go to
 * test-output/console/.
 */
import test from 'ava';
import type { Browser, Page } from 'puppeteer-core';
import { envWorld, settled, sha, type EnvWorld } from '../environments/helpers.ts';
import { chromiumHere, screenshot, signedInPage } from './chromium.ts';
import { memberOf } from '../orgs/helpers.ts';

const MANIFEST = `
services:
  web:
    image: example/web
environments:
  staging:
    type: persistent
  production:
    protection:
      required_reviewers: [{ group: approvers }]
x-svc:
  branding: { app_name: Webshop, primary_color: '#aa3300' }
  auth: { self_signup: false }
`;
const digest = (c: string) => 'sha256:' + c.repeat(64);

if (chromiumHere('the environments page in a browser')) {
  let w: EnvWorld;
  let browser: Browser;
  let page: Page;
  let orgA: string;

  test.before(async () => {
    w = await envWorld('webenvs', MANIFEST);
    orgA = (await w.owner.api.get(`/projects/${w.projectA}`)).body.org_id;
    const group = (await w.owner.api.post(`/orgs/${orgA}/access/groups`, { name: 'approvers' })).body;
    await w.owner.api.post(`/orgs/${orgA}/access/groups/${group.id}/members`, { principal_type: 'user', principal_id: w.owner.id });
    w.releases.add(w.projectA, { id: 'rel_1', tag: 'v1', git_sha: sha('a'), manifest_hash: null, image_digests: { web: digest('a') } });
    w.releases.add(w.projectA, { id: 'rel_2', tag: 'v2', git_sha: sha('b'), manifest_hash: null, image_digests: { web: digest('b') } });
    for (const release_tag of ['v1', 'v2']) {
      const res = await w.owner.api.post(`/projects/${w.projectA}/environments/staging/deploy`, { release_tag });
      if (res.statusCode !== 202) throw new Error(JSON.stringify(res.body));
      await settled(w, 'staging', res.body.id);
    }
    ({ browser, page } = await signedInPage((await w.owner.api.post('/auth/console/links')).body.url));
  });
  test.after.always(async () => {
    await browser?.close();
    await w?.ctx.srv.stop();
  });

  const shot = (name: string) => screenshot(page, name);
  const rows = (table: number) =>
    page.$$eval(`section:nth-of-type(${table}) table tbody tr`, (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')));
  const until = async (what: string, check: () => Promise<boolean>) => {
    for (const end = Date.now() + 20_000; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) if (await check().catch(() => false)) return;
    throw new Error(`timed out waiting for ${what}`);
  };

  test.serial('health and the current release; the deploy history with a log; a rollback from the page deploys the release before', async (t) => {
    t.timeout(90_000);
    await page.goto(`${w.ctx.srv.url}/console/projects/${w.projectA}/environments`);
    await until('the environment', async () => (await rows(1)).some((r) => r[0].startsWith('staging')));
    const env = (await rows(1)).find((r) => r[0].startsWith('staging'))!;
    t.is(env[1], 'healthy');
    t.is(env[2], 'v2');
    await page.click('button[aria-label="Deploys of staging"]');
    await until('the deploys', async () => (await rows(2)).length === 2);
    const history = await rows(2);
    t.deepEqual(
      history.map((r) => [r[1].trim(), r[2], r[3]]),
      [
        ['succeeded', 'v2', 'v1'],
        ['succeeded', 'v1', '–'],
      ],
    );
    await page.click(`button[aria-label="Log of ${history[0][0]}"]`);
    await until('the log', async () => /every service healthy/.test(await page.$eval('[data-testid=deploy-log]', (el) => el.textContent ?? '')));
    await shot('environments');
    page.once('dialog', (d) => void d.accept());
    await page.click('::-p-xpath(//button[normalize-space(.)="Roll back"])');
    await until('the rollback', async () => (await rows(2)).length === 3 && (await rows(2))[0][1].startsWith('succeeded'));
    const [rollback] = await rows(2);
    t.regex(rollback[1], /rollback/);
    t.is(rollback[2], 'v1');
    const current = (await w.owner.api.get(`/projects/${w.projectA}/environments/staging`)).body.current_release;
    // The project is an app: the header and the title carry its x-svc.branding.
    const brand = await page.$eval('[data-testid=app-brand]', (el) => ({ text: el.textContent, color: getComputedStyle(el).borderLeftColor }));
    t.deepEqual(brand, { text: 'Webshop', color: 'rgb(170, 51, 0)' });
    t.is(await page.title(), 'Webshop · svc console');
    t.is(current.tag, 'v1');
    t.deepEqual(w.deployer.calls.slice(-1), ['deploy staging v1']);
  });

  test.serial('a deploy awaiting approval shows its reviewers with Approve and Reject: approved it runs, rejected it ends', async (t) => {
    t.timeout(90_000);
    const dev = await memberOf(w.ctx, orgA, 'webenvs-dev', 'admin');
    const held = async (release_tag: string) => {
      const res = await dev.api.post(`/projects/${w.projectA}/environments/production/deploy`, { release_tag });
      if (res.body.status !== 'awaiting_approval') throw new Error(JSON.stringify(res.body));
      return res.body.id as string;
    };
    const first = await held('v2');
    await page.goto(`${w.ctx.srv.url}/console/projects/${w.projectA}/environments`);
    await until('the environments', async () => (await rows(1)).some((r) => r[0].startsWith('production')));
    await page.click('button[aria-label="Deploys of production"]');
    await until('the held deploy', async () => (await rows(2)).some((r) => r[1].includes('awaiting_approval')));
    const review = await page.$eval(`[aria-label="Review of ${first}"]`, (el) => el.textContent ?? '');
    t.regex(review, /Awaiting approval \(0 of 1\) by group approvers/);
    await shot('environments-awaiting-approval');
    await page.click(`::-p-xpath(//div[@aria-label="Review of ${first}"]//button[normalize-space(.)="Approve"])`);
    await until('the approved deploy to succeed', async () => (await rows(2))[0][1].startsWith('succeeded'));
    t.true(w.deployer.calls.includes('deploy production v2'));

    const second = await held('v1');
    await until('the second held deploy', async () => (await rows(2))[0][1].includes('awaiting_approval'));
    page.once('dialog', (d) => void d.accept());
    await page.click(`::-p-xpath(//div[@aria-label="Review of ${second}"]//button[normalize-space(.)="Reject"])`);
    await until('the rejection', async () => (await rows(2))[0][1].startsWith('rejected'));
    t.regex((await rows(2))[0][1], /rejected by usr_/);
    t.false(w.deployer.calls.includes('deploy production v1'));
  });
}
