/**
 * The job page's diff in a real browser (Debian's Chromium, headless, puppeteer-core), against a
 * server running every role whose worker runs script jobs on a file:// repository: the files with
 * their +/- counts, hunks with additions and deletions coloured, a changed file's text shown as
 * text, the note of a cut patch, and another attempt's diff picked from the attempts table.
 * Screenshots go to test-output/console/.
 */
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { attemptsOf, finished, git, workerWorld, type WorkerWorld } from '../worker/helpers.ts';
import { chromiumHere, screenshot, signedInPage } from './chromium.ts';

const MAX_PATCH_BYTES = 2048;

if (chromiumHere('the job diff in a browser')) {
  let w: WorkerWorld;
  let browser: Browser;
  let page: Page;

  test.before(async () => {
    w = await workerWorld('webdiff', { overrides: { worker: { diff: { max_patch_bytes: MAX_PATCH_BYTES, max_files: 3000 } } } });
    const clone = mkdtempSync(path.join(w.scratch, 'seed-'));
    execFileSync('git', ['clone', '--quiet', w.bare, clone]);
    writeFileSync(path.join(clone, 'app.txt'), 'one\ntwo\nthree\nfour\nfive\n');
    writeFileSync(path.join(clone, 'old-name.txt'), 'renamed as it is\n');
    git(clone, 'add', '-A');
    git(clone, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '--quiet', '-m', 'seed');
    git(clone, 'push', '--quiet', 'origin', 'HEAD:main');
    ({ browser, page } = await signedInPage((await w.api.post('/auth/console/links')).body.url));
  });
  test.after.always(async () => {
    await browser?.close();
    await w?.stop();
  });

  const shot = (name: string) => screenshot(page, name);
  const textOf = (selector: string) => page.$eval(selector, (el) => el.textContent ?? '');

  async function scriptJob(run: string, body: Record<string, unknown> = {}): Promise<any> {
    const res = await w.api.post(`/projects/${w.projectId}/jobs`, {
      description: 'diff',
      ...body,
      hints: { step: { kind: 'script', script: { run } }, ...((body.hints as object) ?? {}) },
    });
    if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
    return finished(w, res.body.id);
  }

  test.serial('the files with their counts, hunks coloured with line numbers, and a changed file shown as text, never markup', async (t) => {
    t.timeout(120_000);
    const job = await scriptJob(
      [
        "printf 'one\\nTWO\\nthree\\nfour\\nfive\\nsix\\n' > app.txt",
        'git mv old-name.txt new-name.txt',
        `printf '<img src=x onerror="document.title=1">\\n<b>bold?</b>\\n' > page.html`,
      ].join(' && '),
      { git: { branch: 'webdiff/${job_id}', commit: 'auto', push: 'on_success' } },
    );
    t.is(job.phase, 'done');
    await page.goto(`${w.srv.url}/console/jobs/${job.id}`);
    await page.waitForSelector('[data-testid=diff] details.file-diff');
    t.is(await textOf('main section:has([data-testid=diff]) h2'), 'Diff of attempt 1');
    t.regex(await textOf('.diff-summary'), /^3 files changed, \+4 −1 from [0-9a-f]{12} to [0-9a-f]{12}$/);
    t.deepEqual(await page.$$eval('.diff-files li', (els) => els.map((el) => el.textContent?.replace(/\s+/g, ' ').trim())), [
      'M app.txt +2 −1',
      'R old-name.txt → new-name.txt',
      'A page.html +2',
    ]);

    const app = '[data-file="app.txt"]';
    const rows = await page.$$eval(`${app} tr.dl`, (els) =>
      els.map((el) => [el.className.replace('dl ', ''), ...[...el.querySelectorAll('td')].map((td) => td.textContent)]),
    );
    t.deepEqual(rows, [
      ['ctx', '1', '1', ' one'],
      ['del', '2', '', '-two'],
      ['add', '', '2', '+TWO'],
      ['ctx', '3', '3', ' three'],
      ['ctx', '4', '4', ' four'],
      ['ctx', '5', '5', ' five'],
      ['add', '', '6', '+six'],
    ]);
    const background = (selector: string) => page.$eval(selector, (el) => getComputedStyle(el).backgroundColor);
    const added = await background(`${app} tr.add td.code`);
    const removed = await background(`${app} tr.del td.code`);
    const context = await background(`${app} tr.ctx td.code`);
    t.not(added, removed, 'additions and deletions are coloured apart');
    t.not(added, context);
    t.not(removed, context);
    // `color(srgb r g b / a)` (color-mix) or `rgb(r, g, b)`: additions lean green, deletions red.
    const channels = (css: string) => (css.match(/[\d.]+/g) ?? []).map(Number).slice(0, 3);
    const [ar, ag] = channels(added);
    const [rr, rg] = channels(removed);
    t.true(ag > ar, `additions are green: ${added}`);
    t.true(rr > rg, `deletions are red: ${removed}`);
    t.regex(await textOf('[data-file="new-name.txt"]'), /Renamed without changes/);

    t.is(await page.$$eval('[data-testid=diff] img, [data-testid=diff] b', (els) => els.length), 0, "the file's markup is not markup here");
    t.regex(await textOf('[data-file="page.html"]'), /<img src=x onerror="document.title=1">/);
    t.not(await page.title(), '1');
    await shot('job-diff');
  });

  test.serial("a cut patch says so; another attempt's diff is picked in the attempts table", async (t) => {
    t.timeout(120_000);
    // Attempt 1 writes a long file and fails; attempt 2, in the same workspace (mode job), adds a small one.
    const created = await w.api.post(`/projects/${w.projectId}/jobs`, {
      description: 'two attempts',
      workspace: { mode: 'job' },
      hints: {
        max_attempts: 2,
        step: { kind: 'script', script: { run: 'if [ -e big.txt ]; then echo small > small.txt; else seq 1 1000 > big.txt; exit 1; fi' } },
      },
    });
    t.is(created.statusCode, 201, JSON.stringify(created.body));
    const two = await finished(w, created.body.id);
    t.is(two.phase, 'done');
    t.is((await attemptsOf(w, two.id)).length, 2);

    await page.goto(`${w.srv.url}/console/jobs/${two.id}`);
    await page.waitForSelector('[data-testid=diff] details.file-diff');
    t.is(await textOf('main section:has([data-testid=diff]) h2'), 'Diff of attempt 2', 'the newest ended attempt by default');
    t.regex(
      await textOf('[data-testid=diff-note]'),
      /^the patch is cut at 2\.0 KiB \(worker\.diff\.max_patch_bytes\), after its last whole line: .* left out; every file is listed with its counts$/,
    );
    t.deepEqual(
      await page.$$eval('.diff-files li', (els) => els.map((el) => el.textContent?.replace(/\s+/g, ' ').trim())),
      ['A big.txt +1000', 'A small.txt +1'],
      'the reused workspace still holds attempt 1 uncommitted work',
    );
    t.regex(await textOf('[data-file="small.txt"]'), /Not in the patch: it was cut before this file/);
    await shot('job-diff-cut');

    await page.click('button[aria-label="Diff of attempt 1"]');
    await page.waitForFunction(() => document.querySelector('main section:has([data-testid=diff]) h2')?.textContent === 'Diff of attempt 1');
    await page.waitForSelector('[data-testid=diff] details.file-diff');
    t.deepEqual(await page.$$eval('.diff-files li', (els) => els.map((el) => el.textContent?.replace(/\s+/g, ' ').trim())), ['A big.txt +1000']);
    t.is(await page.$eval('tr.chosen td', (el) => el.textContent), '1', 'the picked attempt is marked in the table');
  });
}
