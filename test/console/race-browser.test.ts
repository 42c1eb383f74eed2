/**
 * Rival attempts in a real browser (Debian's Chromium, headless, puppeteer-core): a job raced by
 * three variants (the fake Claude and Codex CLIs on a file:// repository) with a check command,
 * the job page's link to the race, the comparison table with each attempt's figures and check,
 * each attempt's diff, and the Choose button making one attempt the job's result.
 * Screenshots go to test-output/console/.
 */
import path from 'node:path';
import test from 'ava';
import type { Browser, Page } from 'puppeteer-core';
import { git, until, workerWorld, type WorkerWorld } from '../worker/helpers.ts';
import { chromiumHere, screenshot, signedInPage } from './chromium.ts';

const FAKE_CLAUDE = path.resolve('test/fixtures/bin/fake-claude');
const FAKE_CODEX = path.resolve('test/fixtures/bin/fake-codex');
/** Attempt 2's check fails on purpose (its branch), the others pass. */
const CHECK = 'test -s CHANGES.md && case "$(git symbolic-ref --short HEAD)" in *-attempt-2) echo "no good"; exit 1;; esac';
const VARIANTS = [
  { harness: 'harness_a', model: 'claude-opus-4-1' },
  { harness: 'harness_a', model: 'claude-sonnet-4-5', reasoning_effort: 'high' },
  { harness: 'harness_d', model: 'gpt-5-codex' },
];

if (chromiumHere('the race comparison in a browser')) {
  let w: WorkerWorld;
  let browser: Browser;
  let page: Page;

  test.before(async () => {
    process.env.ANTHROPIC_API_KEY = 'sk-ant-test-key';
    process.env.OPENAI_API_KEY = 'sk-openai-test-key';
    w = await workerWorld('webrace', {
      overrides: { worker: { concurrency: 3 }, harnesses: { harness_a: { command: FAKE_CLAUDE }, harness_d: { command: FAKE_CODEX } } },
    });
    ({ browser, page } = await signedInPage((await w.api.post('/auth/console/links')).body.url));
    page.on('dialog', (dialog) => void dialog.accept());
  });
  test.after.always(async () => {
    await browser?.close();
    await w?.stop();
  });

  const textOf = (selector: string) => page.$eval(selector, (el) => el.textContent?.replace(/\s+/g, ' ').trim() ?? '');

  test.serial('three variants with a check: the table, each diff, and choosing one makes it the job result', async (t) => {
    t.timeout(180_000);
    const created = await w.api.post(`/projects/${w.projectId}/jobs`, { title: 'Race in the console', description: 'Fix the bug', phase: 'backlog' });
    const jobId = created.body.id;
    const started = await w.api.post(`/jobs/${jobId}/attempts`, { variants: VARIANTS, check_command: CHECK });
    t.is(started.statusCode, 201, JSON.stringify(started.body));
    await until(async () => (await w.api.get(`/jobs/${jobId}/race`)).body.lanes.every((l: any) => l.status === 'ended'), 'the lanes to end', 90_000);

    await page.goto(`${w.srv.url}/console/jobs/${jobId}`);
    await page.waitForSelector(`a[href="/console/jobs/${jobId}/race"]`);
    await page.click(`a[href="/console/jobs/${jobId}/race"]`);
    await page.waitForSelector('[data-testid=race] tbody tr');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=diff] details.file-diff').length === 3);
    t.regex(await textOf('main p'), /^3 variants, check .*\. Every lane has ended: choose the result\.$/);

    const rows = await page.$$eval('[data-testid=race] tbody tr', (trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].slice(0, 5).map((td) => td.textContent?.replace(/\s+/g, ' ').trim())),
    );
    t.deepEqual(rows, [
      ['1', 'harness_a · claude-opus-4-1', 'succeeded', 'passed exit 0', '1 file +1 −0'],
      ['2', 'harness_a · claude-sonnet-4-5 · effort high', 'succeeded', 'failed exit 1', '1 file +1 −0'],
      ['3', 'harness_d · gpt-5-codex', 'succeeded', 'passed exit 0', '1 file +1 −0'],
    ]);
    for (const n of [1, 2, 3]) {
      const row = `[data-testid=race] tr[data-attempt="${n}"]`;
      t.regex(await textOf(`${row} td:nth-child(6)`), /^\$0\.\d+/, 'its cost');
      t.regex(await textOf(`${row} td:nth-child(8)`), /^[1-9]\d*$/, 'its tokens');
      t.regex(await textOf(`${row} td:nth-child(9)`), /^Handled: Fix the bug/);
      t.is(await textOf(`${row} td:nth-child(10)`), `svc/${jobId}-attempt-${n}`);
    }
    // Each attempt's diff, by the job page's diff component.
    t.deepEqual(await page.$$eval('main section:has([data-testid=diff]) h2', (hs) => hs.map((h) => h.textContent)), [
      'Diff of attempt 1 (harness_a · claude-opus-4-1)',
      'Diff of attempt 2 (harness_a · claude-sonnet-4-5 · effort high)',
      'Diff of attempt 3 (harness_d · gpt-5-codex)',
    ]);
    const added = await page.$$eval('[data-file="CHANGES.md"] tr.add td.code', (tds) => tds.map((td) => td.textContent));
    t.deepEqual(added, ['+- Fix the bug', '+- Fix the bug', '+- Fix the bug']);
    await screenshot(page, 'race-compare');

    await page.click('[data-testid=race] tr[data-attempt="3"] button.primary');
    await page.waitForFunction(() => document.querySelector('[data-testid=race] tr[data-attempt="3"]')?.classList.contains('chosen'));
    t.regex(await textOf('main p'), /Attempt 3 was chosen as the job's result\.$/);
    t.is(await page.$$eval('[data-testid=race] button.primary', (bs) => bs.length), 0, 'the choice is made once');
    const job = (await w.api.get(`/jobs/${jobId}`)).body;
    t.is(job.phase, 'done');
    t.is(job.resolved_git.resolved_branch, `svc/${jobId}-attempt-3`);
    t.deepEqual(git(w.bare, 'branch', '--format=%(refname:short)').split('\n').sort(), ['main', `svc/${jobId}-attempt-3`]);
    await screenshot(page, 'race-chosen');
  });
}
