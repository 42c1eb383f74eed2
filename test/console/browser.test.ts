/**
 * The web console in a real browser: Debian's Chromium, headless, driven by puppeteer-core (which
 * downloads nothing), against a server running every role, whose worker runs the fake Claude CLI.
 * Screenshots of the main pages go to test-output/console/.
 */
import test from 'ava';
import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { SignJWT } from 'jose';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { BuilderRegistry, BuilderRegistryToken } from '../../core/ports/builder.ts';
import { ScriptedBuilder } from '../builds/helpers.ts';
import { commitManifest, syncManifest, until, workerWorld, type WorkerWorld } from '../worker/helpers.ts';

const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';
const FAKE_CLAUDE = fileURLToPath(new URL('../fixtures/bin/fake-claude', import.meta.url));
const SSO = { secret: 'console-sso-shared-secret-0123456789abcdef', issuer: 'https://idp.example.test' };
const SHOTS = fileURLToPath(new URL('../../test-output/console/', import.meta.url));

const MANIFEST = `
workflows:
  greet:
    trigger: { event: { type: manual.greet } }
    steps:
      - { name: hello, run: echo hello }
pipelines:
  gated:
    steps:
      - { name: build, run: echo building }
      - { name: hold, run: echo holding, approval: true, depends_on: [build] }
      - { name: deploy, run: echo deploying, depends_on: [hold] }
  versioned:
    inputs:
      version: { required: true, description: the version to tag }
      channel: { default: stable }
    steps:
      - { name: tag, run: 'echo "tag v\${inputs.version} on \${inputs.channel}"' }
environments:
  staging: { pipeline: gated }
`;

/** The same manifest with services to build and a build → release pipeline, committed to the project's repository for the builds test. */
const BUILD_MANIFEST = `${MANIFEST.replace(
  'pipelines:\n',
  `pipelines:
  ship:
    steps:
      - { name: build, action: { type: build, with: { services: [api] } } }
      - { name: release, action: { type: release }, depends_on: [build] }
`,
)}registry: none
services:
  api: { build: { context: api } }
  web: { build: { context: web } }
`;

if (!existsSync(CHROMIUM)) {
  const message = `Chromium is not installed at ${CHROMIUM} (apt-get install -y chromium): the console's browser tests cannot run`;
  if (process.env.CI) test('the console in a browser', (t) => t.fail(message));
  else test.skip(message, () => undefined);
} else {
  let w: WorkerWorld;
  let browser: Browser;
  let page: Page;
  let hook: HttpServer;
  const received: string[] = [];
  // Builds run by a builder that writes its lines without an engine (test/builds/helpers.ts).
  const builder = new ScriptedBuilder();

  test.before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    w = await workerWorld('webui', {
      overrides: { harnesses: { harness_b: { command: FAKE_CLAUDE } }, auth: { sso: SSO }, builds: { poll_ms: 100 } },
      configure: (container) => {
        const builders = new BuilderRegistry();
        builders.add(builder);
        container.registerInstance(BuilderRegistryToken, builders);
      },
    });
    await syncManifest(w, MANIFEST);
    // The agent's key goes into its process: shared with jobs, as an operator giving every org a model key would.
    const key = await w.api.post('/system/secrets', { name: 'ANTHROPIC_API_KEY', value: 'sk-ant-console-test-0123456789', shared_with_jobs: true });
    if (key.statusCode !== 201) throw new Error(`secret: ${JSON.stringify(key.body)}`);
    hook = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        received.push(body);
        res.writeHead(200, { 'content-type': 'text/plain' }).end('thanks');
      });
    }).listen(0, '127.0.0.1');
    await new Promise((resolve) => hook.once('listening', resolve));
    const created = await w.api.post(`/orgs/${w.orgId}/webhooks`, {
      url: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`,
      events: ['*'],
      secret: 'console-test-secret-0123456789',
    });
    if (created.statusCode !== 201) throw new Error(`webhook: ${JSON.stringify(created.body)}`);
    browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 860 });
  });
  test.after.always(async () => {
    await browser?.close();
    hook?.close();
    await w?.stop();
  });

  const shot = (name: string) => page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });
  const textOf = (selector: string) => page.$eval(selector, (el) => el.textContent ?? '');
  const clickButton = async (label: string) => {
    const handle = await page.waitForSelector(`::-p-xpath(//button[normalize-space(.)="${label}"])`, { timeout: 30_000 });
    await handle!.click();
  };

  test.serial('sign in by pasting a token, see the projects, sign out', async (t) => {
    t.timeout(60_000);
    await page.goto(`${w.srv.url}/`);
    await page.waitForSelector('#token');
    await shot('sign-in');
    await page.type('#token', 'not-a-token');
    await clickButton('Sign in');
    await page.waitForSelector('.error');
    t.regex(await textOf('.error'), /^401: invalid token/);
    await page.$eval('#token', (el) => ((el as HTMLInputElement).value = ''));
    await page.type('#token', w.token);
    await clickButton('Sign in');
    await page.waitForSelector('.projects a');
    t.regex(await textOf('.projects'), /webui/);
    await clickButton('Sign out');
    await page.waitForSelector('#token');
    const me = await page.evaluate(() => fetch('/auth/me').then((r) => r.status));
    t.is(me, 401);

    // Single sign-on: the identity provider's token goes through /auth/exchange into the session cookie.
    const idToken = await new SignJWT({ email: 'sso-user@example.com', name: 'Sso User' })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(SSO.issuer)
      .setAudience('svc')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(SSO.secret));
    await page.waitForSelector('#idtoken');
    await page.type('#idtoken', idToken);
    await clickButton('Exchange and sign in');
    await page.waitForSelector('.top .who');
    t.is(await textOf('.top .who'), 'sso-user@example.com');
    await clickButton('Sign out');
    await page.waitForSelector('#token');
  });

  test.serial('sign in with a login link, create a job that runs the fake CLI, watch its log live, and approve its review', async (t) => {
    t.timeout(120_000);
    const link = await w.api.post('/auth/console/links');
    t.is(link.statusCode, 201);
    await page.goto(link.body.url);
    await page.waitForSelector('.top .who');
    t.is(await textOf('.top .who'), 'admin@example.com');
    t.false((await page.evaluate(() => document.cookie)).includes('svc_session'), 'the session cookie is HttpOnly');
    t.is(await page.evaluate(() => Object.keys(localStorage).filter((k) => k !== 'svc-theme').length), 0);

    await page.goto(`${w.srv.url}/console/projects/${w.projectId}/jobs`);
    await page.waitForSelector('#new-job');
    await page.type('#new-job', 'Add a changelog entry for the console');
    await page.click('.new-job input[type=checkbox]');
    await clickButton('Create job');
    await page.waitForFunction(() => location.pathname.startsWith('/console/jobs/'));
    await page.waitForFunction(() => (document.querySelector('[data-testid=log]')?.textContent ?? '').length > 0, { timeout: 60_000 });
    await page.waitForSelector('::-p-xpath(//button[normalize-space(.)="Approve"])', { timeout: 60_000 }).catch(async (e) => {
      await shot('debug');
      const id = page.url().split('/').pop();
      t.log(JSON.stringify((await w.api.get(`/jobs/${id}`)).body), JSON.stringify((await w.api.get(`/projects/${w.projectId}/jobs/${id}/attempts`)).body));
      throw e;
    });
    t.regex(await textOf('[data-testid=log]'), /Handled: Add a changelog entry/);
    t.regex(await textOf('.progress'), /Make the change/);
    t.is(await page.$eval('.switch select', (el) => (el as HTMLSelectElement).value), w.projectId);
    await shot('job-review');
    await clickButton('Approve');
    await page.waitForSelector('.page-head .b-done', { timeout: 30_000 });
    await shot('job-done');
    const main = await textOf('main');
    t.regex(
      main,
      /Work of attempt 1(\d+ files? changed, not committed: git\.commit is \w+|committed [0-9a-f]{12}.*|no changes committed)/,
      'the Git section says what became of the work',
    );
    t.false(/"resolved_sha"|"commits"/.test(main), 'the git metadata is shown readably, not as JSON');

    await page.goto(`${w.srv.url}/console/projects/${w.projectId}/jobs`);
    await page.waitForSelector('.column .card');
    await shot('jobs-board');
  });

  test.serial('run a pipeline, approve its gate, and see every step go green', async (t) => {
    t.timeout(120_000);
    await page.goto(`${w.srv.url}/console/projects/${w.projectId}`);
    await clickButton('Run gated');
    await page.waitForFunction(() => location.pathname.includes('/runs/'));
    await page.waitForSelector('[data-step=hold][data-status=awaiting_approval]', { timeout: 60_000 });
    const edges = await page.$$eval('[data-edge]', (els) => els.map((el) => [el.getAttribute('data-edge'), (el as SVGPathElement).getTotalLength() > 0]));
    t.deepEqual(
      edges,
      [
        ['build->hold', true],
        ['hold->deploy', true],
      ],
      'the graph draws an arrow along each depends_on',
    );
    await shot('pipeline-awaiting-approval');
    await clickButton('Approve');
    await page.waitForSelector('[data-step=deploy][data-status=succeeded]', { timeout: 60_000 });
    const statuses = await page.$$eval('[data-step]', (els) => els.map((el) => el.getAttribute('data-status')));
    t.deepEqual(statuses, ['succeeded', 'succeeded', 'succeeded']);
    await shot('pipeline-succeeded');
    await page.goto(`${w.srv.url}/console/projects/${w.projectId}`);
    await page.waitForSelector('.runs li');
    t.regex(await textOf('.runs'), /succeeded/);
    t.regex(await page.$eval('main', (el) => el.textContent ?? ''), /staging/);
    await shot('project');

    await page.$eval('#input-greet', (el) => ((el as HTMLTextAreaElement).value = ''));
    await page.type('#input-greet', '{"who": "console"}');
    await clickButton('Invoke greet');
    await page.waitForSelector('.invoke .invoked a');
    t.regex(await textOf('.invoke .invoked'), /^Started webui-[0-9a-f]{8}/);
    await page.$eval('#input-greet', (el) => ((el as HTMLTextAreaElement).value = ''));
    await page.type('#input-greet', '{not json');
    await clickButton('Invoke greet');
    await page.waitForSelector('.invoke .error');
    t.regex(await textOf('.invoke .error'), /JSON/);
  });

  test.serial('a pipeline that declares inputs asks for them before it runs: defaults filled in, required ones needed', async (t) => {
    t.timeout(120_000);
    await page.goto(`${w.srv.url}/console/projects/${w.projectId}`);
    await clickButton('Run versioned');
    await page.waitForSelector('form.run-inputs');
    t.deepEqual(await page.$$eval('.run-input', (els) => els.map((el) => el.getAttribute('data-input'))), ['version', 'channel'], "the manifest's order");
    t.is(await page.$eval('#run-versioned-channel', (el) => (el as HTMLInputElement).value), 'stable');
    t.is(await page.$eval('#run-versioned-version', (el) => (el as HTMLInputElement).value), '');
    t.truthy(await page.$('[data-input=version] abbr.required'), 'version is marked required');
    t.falsy(await page.$('[data-input=channel] abbr.required'));
    t.regex(await textOf('[data-input=version] label'), /the version to tag/);
    await shot('pipeline-inputs');
    await clickButton('Start run');
    t.true(await page.$eval('#run-versioned-version', (el) => (el as HTMLInputElement).validity.valueMissing), 'the form does not submit without it');
    t.false(page.url().includes('/runs/'));
    await page.type('#run-versioned-version', '1.4.0');
    await clickButton('Start run');
    await page.waitForFunction(() => location.pathname.includes('/runs/'));
    await page.waitForSelector('[data-step=tag][data-status=succeeded]', { timeout: 60_000 });
    const runId = page.url().split('/').pop();
    const run = await w.api.get(`/projects/${w.projectId}/runs/${runId}`);
    t.deepEqual(run.body.inputs, { version: '1.4.0', channel: 'stable' });
  });

  test.serial('see a webhook delivery and its response', async (t) => {
    t.timeout(60_000);
    await page.goto(`${w.srv.url}/console/orgs/${w.orgId}/webhooks`);
    await clickButton('Send a test');
    await page.waitForSelector('tr[data-delivery=succeeded][data-kind=test]', { timeout: 30_000 });
    t.true(received.length > 0);
    const replay = await page.waitForSelector('tr[data-kind=event] button');
    await replay!.click();
    // The replay skips what the subscription already received and re-sends the rest as deliveries of kind replay.
    await page.waitForSelector('.replay');
    const [, matched, sent, skipped] = /: (\d+) events matched, (\d+) sent again, (\d+) skipped/.exec(await textOf('.replay'))!.map(Number);
    t.is(matched, sent + skipped);
    t.true(skipped >= 1, 'the event of the row replayed from was received already');
    if (sent > 0) await page.waitForSelector('tr[data-kind=replay][data-delivery=succeeded]', { timeout: 30_000 });
    await page.evaluate(() => document.querySelector<HTMLButtonElement>('button[aria-label="Switch theme"]')!.click());
    await shot('webhooks-dark');
  });

  test.serial('on a phone the board stacks into one column and the events page shows routing', async (t) => {
    t.timeout(60_000);
    await page.setViewport({ width: 390, height: 844 });
    await page.goto(`${w.srv.url}/console/projects/${w.projectId}/jobs`);
    await page.waitForSelector('.column .card');
    const columns = await page.$$eval('.column', (els) => new Set(els.map((el) => el.getBoundingClientRect().left)).size);
    t.is(columns, 1);
    await shot('jobs-phone');
    await page.setViewport({ width: 1280, height: 860 });
    const event = await w.api.post(`/projects/${w.projectId}/events`, { type: 'manual.greet' });
    t.is(event.statusCode, 201, JSON.stringify(event.body));
    await page.goto(`${w.srv.url}/console/projects/${w.projectId}/events`);
    const routed = await page.waitForSelector('::-p-xpath(//details[.//span[.="manual.greet"] and contains(., "matched 1")])', { timeout: 30_000 });
    await routed!.click();
    t.regex(await page.$eval('details[open]', (el) => el.textContent ?? ''), /workflow greet/);
    await shot('events');
  });

  test.serial("the org's cost page: the window's activity and spend, a window in the URL, and the API's own error words", async (t) => {
    t.timeout(60_000);
    if ((await page.evaluate(() => document.documentElement.dataset.theme)) === 'dark') {
      await page.evaluate(() => document.querySelector<HTMLButtonElement>('button[aria-label="Switch theme"]')!.click());
    }
    // The earlier steps' work (the greet workflow's job among it) settles first, so the page and the API read the same figures.
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
      const open = await Promise.all(['ready', 'active'].map((phase) => w.api.get(`/projects/${w.projectId}/jobs?phase=${phase}&limit=1`)));
      if (open.every((r) => r.body.data.length === 0)) break;
    }
    await page.goto(`${w.srv.url}/`);
    const link = await page.waitForSelector(`a[href="/console/orgs/${w.orgId}/cost"]`);
    await link!.click();
    await page.waitForSelector('[data-figure=jobs-created] strong');
    const figure = (name: string) => textOf(`[data-figure=${name}] strong`);
    const summary = await w.api.get(`/orgs/${w.orgId}/analytics/summary?window=7d`);
    t.true(Number(await figure('jobs-created')) >= 1, 'the jobs of the earlier steps were created in the window');
    t.is(Number(await figure('jobs-created')), summary.body.jobs.created);
    t.is(Number(await figure('pipeline-runs')), summary.body.pipelines.runs);
    const spend = await w.api.get(`/orgs/${w.orgId}/spend?window=7d`);
    t.is(Number(await figure('spend-attempts')), spend.body.totals.attempts);
    t.regex(await textOf('[data-figure=spend-total]'), new RegExp(`billed \\(${spend.body.currency}\\)`));
    await shot('cost');

    await page.select('.page-head select', '30d');
    await page.waitForFunction(() => location.search === '?window=30d');
    await page.reload();
    await page.waitForSelector('.page-head select');
    t.is(await page.$eval('.page-head select', (el) => (el as HTMLSelectElement).value), '30d', 'the window is part of the deep link');

    const unknown = 'org_01h455vb4pex5vsknk084sn02q';
    const answer = await w.api.get(`/orgs/${unknown}/spend`);
    t.is(answer.statusCode, 404);
    await page.goto(`${w.srv.url}/console/orgs/${unknown}/cost`);
    const words = `${answer.statusCode}: ${answer.body.message}`;
    await page
      .waitForFunction((text) => [...document.querySelectorAll('.error')].some((el) => el.textContent === text), { timeout: 10_000 }, words)
      .catch(() => undefined);
    t.true((await page.$$eval('.error', (els) => els.map((el) => el.textContent))).includes(words));
  });

  test.serial("the project's builds: a pipeline step links its build; a build's log live, then cancelled; a failed run's stage and log", async (t) => {
    t.timeout(120_000);
    await page.goto((await w.api.post('/auth/console/links')).body.url);
    await page.waitForSelector('.top .who');
    // A commit whose manifest declares services to build, in the project's repository.
    const { sha, manifestHash } = await commitManifest(w, BUILD_MANIFEST);

    // A pipeline's build step names its build: the step's job links to it.
    builder.next = 'images';
    const started = await w.api.post(`/projects/${w.projectId}/pipelines/ship/run`, { ref: sha });
    t.is(started.statusCode, 201, JSON.stringify(started.body));
    const shipped = await until(
      async () => {
        const run = (await w.api.get(`/projects/${w.projectId}/runs/${started.body.id}`)).body;
        return ['succeeded', 'failed', 'cancelled'].includes(run.status) && run;
      },
      'the ship run to end',
      60_000,
    );
    t.is(shipped.status, 'succeeded', JSON.stringify(shipped));
    const shippedBuild = (await w.api.get(`/projects/${w.projectId}/builds`)).body.data[0];
    await page.goto(`${w.srv.url}/console/jobs/${shipped.steps.find((s: { name: string }) => s.name === 'build').job_id}`);
    const link = await page.waitForSelector(`main a[href="/console/builds/${shippedBuild.id}"]`, { timeout: 30_000 });
    await link!.click();
    await page.waitForSelector('.page-head .b-completed');
    await page.waitForFunction(() => (document.querySelector('[data-testid=log]')?.textContent ?? '').includes('step line 40'));
    const built = await textOf('main');
    t.regex(built, /Requested bypipeline ship run prun_\w+, step build/, 'the pipeline run that asked for it, by name');
    t.regex(built, /api webui\/api:local/, 'its image');
    t.regex(built, new RegExp(`sha-${sha.slice(0, 12)}`), 'the release the next step made of it');
    t.false(/"git_sha"|"image_ref"/.test(built), 'the build is shown readably, not as JSON');
    await shot('build-completed');

    // A build still running: the Builds page lists it, its page follows the log live; cancelling ends the stream.
    builder.next = 'hang';
    const created = await w.api.post(`/projects/${w.projectId}/builds`, { git_sha: sha, manifest_hash: manifestHash, services: ['web'] });
    t.is(created.statusCode, 201, JSON.stringify(created.body));
    const buildId = created.body.id;
    const nav = await page.waitForSelector('::-p-xpath(//header//nav//a[.="Builds"])');
    await nav!.click();
    await page.waitForSelector(`tr[data-build="${buildId}"]`, { timeout: 30_000 });
    t.deepEqual(await page.$$eval('tr[data-build]', (rows) => rows.map((r) => r.getAttribute('data-build'))), [buildId, shippedBuild.id], 'newest first');
    await page.waitForSelector(`tr[data-build="${buildId}"][data-status=building]`, { timeout: 30_000 });
    t.regex(await textOf(`tr[data-build="${shippedBuild.id}"]`), /completed.*webui\/api:local/);
    await shot('builds');
    await page.click(`tr[data-build="${buildId}"] a`);
    await page.waitForFunction(() => (document.querySelector('[data-testid=log]')?.textContent ?? '').includes('step line 40'), { timeout: 30_000 });
    t.is(await textOf('.page-head .badge'), 'building');
    t.is(await textOf('main section .stream'), 'live');
    await shot('build-live');
    page.once('dialog', (dialog) => void dialog.accept());
    await clickButton('Cancel build');
    await page.waitForSelector('.page-head .b-cancelled', { timeout: 30_000 });
    await page.waitForFunction(() => document.querySelector('main section .stream')?.textContent === 'ended');
    t.regex(await textOf('[data-testid=log]'), /step line 1step line 2/, 'the lines stay once the stream ended');

    // Run again, and the builder fails: the page says where, and the log of the new run is read in full.
    builder.next = 'fail';
    await clickButton('Rebuild without reuse');
    await page.waitForSelector('[data-testid=failure]', { timeout: 30_000 });
    t.regex(await textOf('[data-testid=failure]'), /Failed: build error.*at stage \[build 2\/3\] RUN false.*did not complete successfully/);
    t.is(await page.$$eval('tr[data-run]', (rows) => rows.length), 2);
    await page.waitForFunction(() => (document.querySelector('[data-testid=log]')?.textContent ?? '').includes('step line 40'));
    await shot('build-failed');
    // A reload reads the ended run's log a page at a time, not as a stream.
    await page.reload();
    await page.waitForFunction(() => (document.querySelector('[data-testid=log]')?.textContent ?? '').includes('step line 40'), { timeout: 30_000 });
    const lines = (await w.api.get(`/builds/${buildId}/logs?limit=1`)).body.pagination.total;
    t.true(lines >= 40);
    t.is(await textOf('main section .stream'), `${lines} lines`);
  });
}
