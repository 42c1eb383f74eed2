/**
 * A direct deploy's log (`GET …/environments/{env}/deploys/{id}/logs`), with the recording deployer:
 * svc's lines and the deployer's progress in order, paged; followed live as server-sent events with
 * Last-Event-ID resume, ending with the deploy; a failed deploy's log says why; secret values never
 * reach it.
 */
import test from 'ava';
import { assertError } from '../orgs/helpers.ts';
import { envWorld, settled, sha, type EnvWorld } from './helpers.ts';

const TOKEN = 'tok-3f9a1c77e2d04b5a';
const MANIFEST = `
services:
  web:
    image: example/web
    environment:
      GREETING: hello
      API_TOKEN: \${secret.API_TOKEN}
environments:
  staging:
    type: persistent
`;

const digest = (c: string) => 'sha256:' + c.repeat(64);
let w: EnvWorld;
const base = () => `/projects/${w.projectA}/environments/staging`;
const logsOf = async (deployId: string, query = '') => {
  const res = await w.owner.api.get(`${base()}/deploys/${deployId}/logs${query}`);
  if (res.statusCode !== 200) throw new Error(`logs: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body;
};
const deploy = async (body: Record<string, unknown>, path = '/deploy') => {
  const res = await w.owner.api.post(`${base()}${path}`, body);
  if (res.statusCode !== 202) throw new Error(`deploy: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body;
};

test.before(async () => {
  w = await envWorld('deploylogs', MANIFEST);
  const secret = await w.owner.api.post(`/projects/${w.projectA}/secrets`, { name: 'API_TOKEN', value: TOKEN });
  if (secret.statusCode !== 201) throw new Error(`secret: ${secret.statusCode} ${JSON.stringify(secret.body)}`);
  w.releases.add(w.projectA, { id: 'rel_1', tag: 'v1', git_sha: sha('a'), manifest_hash: null, image_digests: { web: digest('a') } });
  w.releases.add(w.projectA, { id: 'rel_2', tag: 'v2', git_sha: sha('b'), manifest_hash: null, image_digests: { web: digest('b') } });
  w.releases.add(w.projectA, { id: 'rel_3', tag: 'v3', git_sha: sha('c'), manifest_hash: null, image_digests: { web: digest('c') } });
});
test.after.always(() => w?.ctx.srv.stop());

test.serial("a direct deploy's log: svc's lines and the deployer's progress in order, paged by limit or after_seq", async (t) => {
  const started = await deploy({ release_tag: 'v1' });
  t.like(await settled(w, 'staging', started.id), { status: 'succeeded' });
  const page = await logsOf(started.id);
  t.deepEqual(
    page.data.map((l: any) => [l.seq, l.stream, l.line]),
    [
      [1, 'system', `deploying release v1 (rel_1, git ${sha('a').slice(0, 12)}) to environment staging on the recording deployer: web ${digest('a')}`],
      [2, 'system', 'nothing serves the environment yet'],
      [3, 'deployer', `web: starting ${digest('a')}`],
      [4, 'deployer', 'every service healthy'],
      [5, 'system', 'deploy succeeded: release v1 serves environment staging, health healthy (web: recorded)'],
    ],
  );
  t.like(page.pagination, { total: 5, has_more: false });
  t.truthy(Date.parse(page.data[0].at));
  const two = await logsOf(started.id, '?after_seq=2&limit=2');
  t.deepEqual(
    two.data.map((l: any) => l.seq),
    [3, 4],
  );
  t.like(two.pagination, { total: 3, has_more: true });
});

/** Reads server-sent events from a real connection, frame by frame, until `until` says so or the stream ends. */
async function readEvents(path: string, headers: Record<string, string>, until: (frames: string[]) => boolean): Promise<{ frames: string[]; ended: boolean }> {
  const res = await fetch(`${w.ctx.srv.url}${path}`, { headers: { authorization: `Bearer ${w.owner.token}`, accept: 'text/event-stream', ...headers } });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const frames = text.split('\n\n').filter((f) => f.startsWith('id:') || f.startsWith('event:'));
    if (until(frames)) {
      await reader.cancel();
      return { frames, ended: false };
    }
    const { value, done } = await reader.read();
    if (done) return { frames, ended: true };
    text += decoder.decode(value, { stream: true });
  }
}

test.serial('followed as server-sent events: the lines as they are written, then the end; Last-Event-ID resumes after a line', async (t) => {
  let release!: () => void;
  w.deployer.hold = new Promise((r) => (release = r));
  const started = await deploy({ release_tag: 'v2' });
  const path = `${base()}/deploys/${started.id}/logs`;
  try {
    const live = await readEvents(path, {}, (frames) => frames.some((f) => f.includes('web: starting')));
    t.false(live.ended);
    t.false(
      live.frames.some((f) => f.startsWith('event: end')),
      'the deploy is still running',
    );
    t.regex(live.frames[1], /^id: 2\nevent: log\ndata: \{"seq":2,"stream":"system","line":"release v1 serves now"/);
  } finally {
    release();
    w.deployer.hold = null;
  }
  const rest = await readEvents(path, { 'last-event-id': '3' }, () => false);
  t.true(rest.ended);
  t.deepEqual(
    rest.frames.map((f) => f.split('\n')[0]),
    ['id: 4', 'id: 5', 'event: end'],
  );
  t.regex(rest.frames[1], /"line":"deploy succeeded: release v2 serves environment staging/);
  t.regex(rest.frames[2], new RegExp(`^event: end\\ndata: \\{"deploy_id":"${started.id}","status":"succeeded","error_message":null\\}`));
  const replay = await w.owner.api.get(`${path}?follow=true&last_event_id=4`);
  t.deepEqual(
    [...String(replay.body).matchAll(/^(id: \d+|event: \w+)$/gm)].map((m) => m[1]),
    ['id: 5', 'event: log', 'event: end'],
  );
});

test.serial("a failed deploy's log says why and what keeps serving; secret values are masked in the log, the error and the services", async (t) => {
  w.deployer.alsoSay = (target) => [`web: environment API_TOKEN=${target.services.web.environment.API_TOKEN}`];
  w.deployer.failNext = `health check failing: token ${TOKEN} refused`;
  try {
    const started = await deploy({ release_tag: 'v3' });
    const ended = await settled(w, 'staging', started.id);
    t.like(ended, { status: 'failed', error_message: 'health check failing: token *** refused (release v2 keeps serving)' });
    t.is(ended.services[0].detail, 'health check failing: token *** refused');
    const lines = (await logsOf(started.id)).data.map((l: any) => l.line);
    t.deepEqual(lines.slice(2), [
      `web: starting ${digest('c')}`,
      'web: environment API_TOKEN=***',
      'web: not healthy: health check failing: token *** refused',
      'deploy failed: health check failing: token *** refused (release v2 keeps serving)',
    ]);
    t.false(JSON.stringify(await w.db('environment_deploy_logs').select('line')).includes(TOKEN));
    t.like((await w.owner.api.get(base())).body, { current_release: { tag: 'v2' } });
  } finally {
    w.deployer.alsoSay = () => [];
  }
});

test.serial('a rollback has its log too, saying what it rolls back to', async (t) => {
  const back = await deploy({}, '/rollback');
  t.like(await settled(w, 'staging', back.id), { status: 'succeeded', release: { tag: 'v1' } });
  const first = (await logsOf(back.id)).data[0].line;
  t.regex(first, /^deploying release v1 \(rel_1, git a{12}\) to environment staging on the recording deployer \(a rollback to the release of dep_\w+\)/);
});

test.serial('a failed deploy whose deployer could not bring the previous release back says so instead of "keeps serving"', async (t) => {
  w.deployer.failNext = 'not healthy: web (exited with code 3); the previous container(s) did not come back healthy: web (exited with code 1)';
  w.deployer.previousServesNext = false;
  const ended = await settled(w, 'staging', (await deploy({ release_tag: 'v3' })).id);
  t.like(ended, {
    status: 'failed',
    error_message:
      'not healthy: web (exited with code 3); the previous container(s) did not come back healthy: web (exited with code 1) (release v1 was stopped for the deploy and did not come back healthy)',
  });
  t.like((await w.owner.api.get(base())).body, { current_release: { tag: 'v1' } });
});

test.serial('unknown, foreign and invisible deploys are 404; a bad id is a 400 naming it; the route is in /openapi.json with its schemas', async (t) => {
  const [mine] = (await w.owner.api.get(`${base()}/deploys`)).body.data;
  assertError(t, await w.owner.api.get(`${base()}/deploys/dep_01m000000000000000000000zz/logs`), 404, 'deploy dep_01m000000000000000000000zz not found');
  assertError(t, await w.owner.api.get(`/projects/${w.projectA}/environments/nope/deploys/${mine.id}/logs`), 404, 'environment nope not found');
  t.is((await w.outsider.api.get(`${base()}/deploys/${mine.id}/logs`)).statusCode, 404);
  const bad = await w.owner.api.get(`${base()}/deploys/nope/logs`);
  t.is(bad.statusCode, 400);
  t.regex(bad.body.message, /deploy_id/);
  const doc = (await w.owner.api.get('/openapi.json')).body;
  const op = doc.paths['/projects/{project_id}/environments/{env}/deploys/{deploy_id}/logs']?.get;
  t.truthy(op);
  const [page, stream] = op.responses['200'].content['application/json'].schema.anyOf;
  t.deepEqual(stream, { type: 'string', description: 'text/event-stream' });
  const resolve = (schema: any): any =>
    schema.$ref
      ? resolve(
          schema.$ref
            .slice(2)
            .split('/')
            .reduce((o: any, k: string) => o[k], doc),
        )
      : schema;
  const items = resolve(resolve(resolve(page).properties.data).items);
  t.deepEqual(Object.keys(items.properties), ['seq', 'stream', 'line', 'at'], 'the page and its lines are described');
  t.deepEqual(resolve(items.properties.stream).enum, ['system', 'deployer']);
  t.deepEqual(Object.keys(op.responses).sort(), ['200', '400', '401', '403', '404']);
});
