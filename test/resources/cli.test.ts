/** End to end: `svc doc …` (node dist/cli/bin.js, a subprocess) against a real server. */
import test from 'ava';
import { rm, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cliUser, showRun, tempHome } from '../cli/helpers.ts';
import { bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let home = '';
let token = '';
let org = '';
let project = '';

const { svc, ok, json } = cliUser(() => ({ home, url: server.url, token }));

test.before(async () => {
  server = await startTestServer();
  token = (await bootstrapAdmin(server.server)).token;
  home = await tempHome();
  org = (await json(['org', 'create', 'Docs CLI'])).id;
  project = (await json(['project', 'create', 'Docs', '--org', org, '--slug', 'doccli'])).id;
});
test.after.always(async () => {
  await server?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

test.serial('put creates then versions a document; get, list, versions, delete', async (t) => {
  await writeFile(join(home, 'style.md'), '# Style\nfirst\n');
  const created = await json(['doc', 'put', '/guides/style.md', '--file', join(home, 'style.md'), '--metadata', '{"team":"docs"}', '--org', org]);
  t.like(created, { path: '/guides/style.md', version: 1, project_id: null, metadata: { team: 'docs' } });
  const second = await json(['doc', 'put', 'guides/style.md', '--content', 'second', '--expected-version', '1', '--org', org]);
  t.like(second, { id: created.id, version: 2, metadata: { team: 'docs' } });

  t.is(await ok(['doc', 'get', '/guides/style.md', '--org', org]), 'second');
  t.is(await ok(['doc', 'get', created.id, '--version', '1', '--org', org]), '# Style\nfirst\n');
  await ok(['doc', 'get', '/guides/style.md', '--version', '1', '--output', join(home, 'out.md'), '--org', org]);
  t.is(await readFile(join(home, 'out.md'), 'utf8'), '# Style\nfirst\n');

  const scoped = await json(['doc', 'put', '/runbook.md', '--content', 'run', '--project', project, '--org', org]);
  t.is(scoped.project_id, project);
  const table = await ok(['doc', 'list', '--org', org]);
  t.regex(table, /^PATH\s+VERSION\s+SIZE\s+SCOPE\s+UPDATED\s+ID/);
  t.regex(table, new RegExp(`/guides/style\\.md\\s+2\\s+6\\s+org\\s+\\S+\\s+${created.id}`));
  t.regex(table, new RegExp(`/runbook\\.md\\s+1\\s+3\\s+${project}`));
  t.deepEqual(
    (await json(['doc', 'list', '--path', '/guides', '--org', org])).data.map((d: any) => d.path),
    ['/guides/style.md'],
  );

  const versions = await ok(['doc', 'versions', '/guides/style.md', '--org', org]);
  t.regex(versions, new RegExp(`^/guides/style\\.md \\(${created.id}\\)\nVERSION\\s+HASH\\s+SIZE\\s+BY\\s+CREATED\n2\\s+sha256:`));

  const stale = await svc(['doc', 'put', '/guides/style.md', '--content', 'x', '--expected-version', '1', '--org', org]);
  t.is(stale.code, 1, showRun(['put stale'], stale));
  t.is(stale.stderr, `svc: document ${created.id} is at version 2, not the expected_version 1 (409)\n`);

  t.is(await ok(['doc', 'delete', '/guides/style.md', '--org', org]), `Deleted /guides/style.md (${created.id}).\n`);
  const gone = await svc(['doc', 'get', '/guides/style.md', '--org', org]);
  t.is(gone.code, 1);
  t.is(gone.stderr, `svc: no document at /guides/style.md in org ${org} (404)\n`);
  t.like(await json(['doc', 'get', created.id, '--org', org]), { deleted: true, version: 2 });
});

test.serial('usage and validation errors', async (t) => {
  const neither = await svc(['doc', 'put', '/a.md', '--org', org]);
  t.is(neither.code, 2);
  t.regex(neither.stderr, /^svc: pass exactly one of --file or --content\n/);
  const noOrg = await svc(['doc', 'list']);
  t.is(noOrg.code, 2);
  t.regex(noOrg.stderr, /^svc: missing org: pass --org ID/);
  const bad = await svc(['doc', 'put', '/a/../b.md', '--content', 'x', '--org', org]);
  t.is(bad.code, 1);
  t.regex(bad.stderr, /"path" must not have "\." or "\.\." segments \(400\)/);
  const unknown = await svc(['doc', 'frobnicate']);
  t.is(unknown.code, 2);
  t.regex(unknown.stderr, /^svc: unknown doc command "frobnicate"/);
});
