/**
 * The project's job list in a real browser (Debian's Chromium, headless, puppeteer-core): searched
 * and filtered on the server (words, phase, harness, label), paged, with what each job's ended
 * attempts cost and took; and its schedules page (add, pause, resume, delete). Screenshots go to
 * test-output/console/.
 */
import test from 'ava';
import type { Browser, Page } from 'puppeteer-core';
import { finished, workerWorld, type WorkerWorld } from '../worker/helpers.ts';
import { chromiumHere, screenshot, signedInPage } from './chromium.ts';

if (chromiumHere('the job list in a browser')) {
  let w: WorkerWorld;
  let browser: Browser;
  let page: Page;
  let ran: any;

  test.before(async () => {
    w = await workerWorld('weblist');
    // 55 planned jobs (more than a page of 50), words, harnesses and labels spread; and one that runs.
    for (let i = 0; i < 55; i++) {
      const res = await w.api.post(`/projects/${w.projectId}/jobs`, {
        title: `${i % 5 === 0 ? 'Fix the login redirect' : 'Tidy the parser'} ${i}`,
        description: i % 5 === 0 ? 'users land on the wrong page' : 'small cleanup',
        phase: 'backlog',
        harness: i % 2 ? 'harness_b' : 'harness_c',
        labels: [i % 3 === 0 ? 'team-web' : 'team-core'],
      });
      if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
    }
    const run = await w.api.post(`/projects/${w.projectId}/jobs`, {
      title: 'Measure the build',
      description: 'a script that takes a moment',
      hints: { step: { kind: 'script', script: { run: 'sleep 1.2' } } },
    });
    ran = await finished(w, run.body.id);
    ({ browser, page } = await signedInPage((await w.api.post('/auth/console/links')).body.url));
  });
  test.after.always(async () => {
    await browser?.close();
    await w?.stop();
  });

  const shot = (name: string) => screenshot(page, name);
  // '' until the page has rendered it
  const summary = () => page.$eval('[aria-live=polite]', (el) => el.textContent ?? '').catch(() => '');
  const rows = () => page.$$eval('section table tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')));
  const until = async (what: string, check: () => Promise<boolean>) => {
    for (const end = Date.now() + 15_000; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) if (await check()) return;
    throw new Error(`timed out waiting for ${what}: ${await summary()}`);
  };

  test.serial('the newest page with its total, cost and duration columns, and the older page', async (t) => {
    t.timeout(60_000);
    await page.goto(`${w.srv.url}/console/projects/${w.projectId}/jobs`);
    await until('the list', async () => /^56 jobs/.test(await summary()));
    const first = await rows();
    t.is(first.length, 50);
    const measured = first.find((r) => r[0] === ran.id)!;
    t.truthy(measured, 'the job that ran is the newest');
    t.is(measured[4], '$0.00', 'a script costs nothing');
    t.regex(measured[5], /^\d+ (ms|s)$/, 'its duration');
    t.true(
      first.filter((r) => r[0] !== ran.id).every((r) => r[4] === '–'),
      'planned jobs have no figures',
    );
    await shot('jobs-list');
    await page.click('::-p-xpath(//button[normalize-space(.)="Older"])');
    await until('the older page', async () => (await rows()).length === 6);
    t.regex(await summary(), /51–56 shown/);
  });

  test.serial('words, phase, harness and label narrow the list on the server; Clear brings everything back', async (t) => {
    t.timeout(60_000);
    await page.goto(`${w.srv.url}/console/projects/${w.projectId}/jobs`);
    await until('the list', async () => /^56 jobs/.test(await summary()));
    await page.type('input[type=search]', 'login redir');
    await until('the words', async () => /^11 jobs/.test(await summary()));
    t.true((await rows()).every((r) => /Fix the login redirect/.test(r[1])));
    await page.select('form[role=search] label:nth-of-type(3) select', 'harness_c');
    await until('the harness', async () => /^6 jobs/.test(await summary()));
    t.true((await rows()).every((r) => r[3] === 'harness_c'));
    await page.type('form[role=search] label:nth-of-type(5) input', 'team-web');
    await until('the label', async () => /^2 jobs/.test(await summary()));
    await page.select('form[role=search] label:nth-of-type(2) select', 'done');
    await until('the phase', async () => /^0 jobs/.test(await summary()));
    await shot('jobs-search');
    await page.click('::-p-xpath(//button[normalize-space(.)="Clear"])');
    await until('everything again', async () => /^56 jobs/.test(await summary()));
    t.pass();
  });

  test.serial("schedules: a bad cron is refused in the API's words, a good one is listed, paused, resumed and deleted", async (t) => {
    t.timeout(60_000);
    await page.goto(`${w.srv.url}/console/projects/${w.projectId}/schedules`);
    await page.waitForSelector('form[aria-label="New schedule"]');
    const input = (n: number) => `form[aria-label="New schedule"] label:nth-of-type(${n}) input`;
    await page.type(input(1), 'nightly tests');
    await page.type(input(2), 'not a cron');
    await page.click('::-p-xpath(//button[normalize-space(.)="Add schedule"])');
    await page.waitForSelector('.error');
    t.regex(await page.$eval('.error', (el) => el.textContent ?? ''), /^400: .*cron/);
    await page.$eval(input(2), (el) => ((el as HTMLInputElement).value = ''));
    await page.type(input(2), '0 3 * * *');
    await page.click('::-p-xpath(//button[normalize-space(.)="Add schedule"])');
    await until('the schedule listed', async () => (await rows()).some((r) => r[0] === 'nightly tests'));
    const listed = (await w.api.get(`/projects/${w.projectId}/schedules`)).body.data;
    t.like(listed[0], { name: 'nightly tests', cron: '0 3 * * *', event_type: 'cron.tick', enabled: true });
    await page.click('::-p-xpath(//button[normalize-space(.)="Pause"])');
    await until('paused', async () => (await rows())[0]?.[3] === 'paused');
    t.false((await w.api.get(`/projects/${w.projectId}/schedules/${listed[0].id}`)).body.enabled);
    await shot('schedules');
    await page.click('::-p-xpath(//button[normalize-space(.)="Resume"])');
    await until('resumed', async () => (await rows())[0]?.[3] === 'active');
    page.once('dialog', (d) => void d.accept());
    await page.click('::-p-xpath(//button[normalize-space(.)="Delete"])');
    await until('deleted', async () => (await rows()).length === 0);
    t.is((await w.api.get(`/projects/${w.projectId}/schedules`)).body.data.length, 0);
  });
}
