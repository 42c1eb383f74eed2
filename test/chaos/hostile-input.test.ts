import test from 'ava';
import { startPgCluster, type PgCluster } from '../support/pg-cluster.ts';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { type Client, bootstrap, tail } from '../support/chaos.ts';

/**
 * Hostile input at volume against every route /openapi.json lists: each body field in turn set to a
 * NUL-bearing string, a lone surrogate, JSON nested 10,000 deep, a 200 KB string and the wrong type;
 * bodies that are not JSON at all; every path and query parameter hostile. The system administrator
 * sends them (the widest reach), in tenant A's org and project, while tenant B keeps creating jobs in
 * its own: 0 × 5xx anywhere, and none of B's creates fails.
 */
let cluster: PgCluster;
let server: ServerProcess;
let client: Client;
const a = { orgId: '', projectId: '' };
const b = { orgId: '', projectId: '' };

test.before(async () => {
  cluster = await startPgCluster();
  server = await startServerProcess(cluster.url, { SVC_ROLES: 'api' });
  const boot = await bootstrap(server.url);
  client = boot.client;
  Object.assign(a, { orgId: boot.orgId, projectId: boot.projectId });
  const org = await client.call('POST', '/orgs', { name: 'Bystander' });
  const project = await client.call('POST', '/projects', { org_id: org.body.id, name: 'bystander', slug: 'bystand' });
  if (project.status !== 201) throw new Error(`bystander: ${JSON.stringify([org, project])}`);
  Object.assign(b, { orgId: org.body.id, projectId: project.body.id });
});

test.after.always(async () => {
  await server?.stop();
  await cluster?.destroy();
});

/** JSON text of an object nested `depth` deep (too deep for JSON.stringify to write). */
const nested = (depth: number): string => `${'{"n":'.repeat(depth)}"deep"${'}'.repeat(depth)}`;
/** Field values as JSON text; `"x\\ud800y"` is a lone surrogate once parsed. */
const HOSTILE_VALUES = ['"a\\u0000b"', '"x\\ud800y"', nested(10_000), JSON.stringify('z'.repeat(200_000)), '[["wrong",{"type":true}]]', '-1e308'];
const HOSTILE_PARAMS = ['a%00b', '%ED%A0%80', 'x'.repeat(3_000), '..%2F..%2Fetc%2Fpasswd', '%F0%9F%92%A9', "1'%20OR%201=1"];
const NOT_JSON = ['{"unterminated": ', '\u0000', JSON.stringify(nested(10_000)), '[]', 'null', '"just a string"'];

interface Operation {
  method: string;
  path: string;
  fields: string[];
  query: string[];
}

async function operations(): Promise<Operation[]> {
  const doc = (await client.call('GET', '/openapi.json')).body;
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(methods)) {
      const params: any[] = op.parameters ?? [];
      const body = params.find((p) => p.in === 'body');
      const ref: string | undefined = body?.schema?.$ref;
      const schema = ref ? doc.definitions[ref.split('/').pop()!] : body?.schema;
      ops.push({
        method: method.toUpperCase(),
        path,
        fields: Object.keys(schema?.properties ?? {}),
        query: params.filter((p) => p.in === 'query').map((p) => p.name),
      });
    }
  }
  return ops;
}

/** Our own ids in path parameters (so bodies reach their checks), anything else as a plain word. */
const realPath = (path: string) =>
  path.replace(/\{(\w+)\*?\}/g, (_, key: string) => (key === 'org_id' ? a.orgId : key === 'project_id' ? a.projectId : 'nothing-here'));

function requests(op: Operation): { method: string; path: string; body?: string }[] {
  const out: { method: string; path: string; body?: string }[] = [];
  const hasBody = op.method !== 'GET' && op.method !== 'DELETE';
  // Deleting tenant A's org or project, or rotating signing keys, would end the run, not test it.
  const destructive = op.method === 'DELETE' || op.path === '/auth/signing-keys/rotate';
  for (const value of HOSTILE_PARAMS) {
    if (op.path.includes('{')) out.push({ method: op.method, path: op.path.replace(/\{\w+\*?\}/g, value), body: hasBody ? '{}' : undefined });
    if (op.query.length && !destructive)
      out.push({ method: op.method, path: `${realPath(op.path)}?${op.query.map((q) => `${q}=${value}`).join('&')}`, body: hasBody ? '{}' : undefined });
  }
  if (!hasBody || destructive) return out;
  for (const field of op.fields)
    for (const value of HOSTILE_VALUES) out.push({ method: op.method, path: realPath(op.path), body: `{${JSON.stringify(field)}:${value}}` });
  for (const text of NOT_JSON) out.push({ method: op.method, path: realPath(op.path), body: text });
  return out;
}

test('hostile input across every route: 0 × 5xx, no bystander create fails', async (t) => {
  const ops = (await operations()).filter((op) => !op.path.startsWith('/swaggerui') && !op.path.endsWith('/stream'));
  const queue = ops.flatMap(requests);
  const failures: string[] = [];
  let sent = 0;
  let fuzzing = true;
  const bystander = { ok: 0, failed: 0 };
  const createLoop = (async () => {
    while (fuzzing) {
      const status = await client.status('POST', `/projects/${b.projectId}/jobs`, { description: `bystander ${bystander.ok}`, hints: { 'x-n': bystander.ok } });
      if (status === 201) bystander.ok++;
      else bystander.failed++;
    }
  })();
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const status = await client.status(next.method, next.path, next.body, 30_000);
      sent++;
      if (status >= 500 || status === 0) failures.push(`${status} ${next.method} ${next.path.slice(0, 120)} ${String(next.body).slice(0, 80)}`);
    }
  };
  const started = Date.now();
  await Promise.all(Array.from({ length: 6 }, worker));
  fuzzing = false;
  await createLoop;
  const listed = await client.call('GET', `/projects/${b.projectId}/jobs?limit=1`);
  const created = listed.body?.pagination?.total;
  t.is(listed.status, 200, JSON.stringify(listed.body));
  t.log(
    `${sent} hostile requests over ${ops.length} operations in ${((Date.now() - started) / 1000).toFixed(0)} s: ${failures.length} × 5xx; ` +
      `bystander creates ${bystander.ok} ok, ${bystander.failed} failed, ${created} stored`,
  );
  t.deepEqual(failures.slice(0, 20), [], tail(server));
  t.is(bystander.failed, 0);
  t.is(created, bystander.ok, "every bystander create stored, nothing else in the bystander's project");
  t.true(server.running());
});
