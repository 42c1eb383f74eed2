import test from 'ava';
import { createTestDatabase } from '../support/database.ts';
import { as, bootstrapAdmin, call, startTestServer, type TestServer } from '../support/server.ts';
import { ModelResolver } from '../../plugins/inference/resolution.ts';
import { SecretResolverToken } from '../../core/ports/secrets.ts';
import { SharedMemos } from '../../core/db/shared-memos.ts';

/**
 * What a job creation remembers per process (a project's liveness and slug, its manifest defaults,
 * its org's budget settings) is forgotten on every replica when it changes on one: two servers on
 * one database, the change made through one, the next creation on the other sees it.
 */
let a: TestServer;
let b: TestServer;
let drop: () => Promise<void>;
let adminA: ReturnType<typeof as>;
let adminB: ReturnType<typeof as>;
let orgId: string;
let token: string;

test.before(async () => {
  const database = await createTestDatabase();
  drop = database.drop;
  a = await startTestServer({ database });
  b = await startTestServer({ database });
  ({ token } = await bootstrapAdmin(a.server));
  adminA = as(a.server, token);
  adminB = as(b.server, token);
  orgId = (await adminA.post('/orgs', { name: 'Memos' })).body.id;
});
test.after.always(async () => {
  await b?.stop();
  await a?.stop();
  await drop?.();
});

/** Polls `probe` until it holds (2 s at most, a notice takes about a millisecond); the last answer. */
async function eventually<T>(probe: () => Promise<T>, holds: (v: T) => boolean): Promise<T> {
  const until = Date.now() + 2_000;
  let value = await probe();
  while (!holds(value) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 10));
    value = await probe();
  }
  return value;
}

const newProject = async (slug: string): Promise<string> => (await adminA.post('/projects', { org_id: orgId, name: slug, slug })).body.id;

test.serial('a project deleted through one replica takes no new jobs on the other; restored, it takes them again', async (t) => {
  const project = await newProject('memodel');
  t.is((await adminB.post(`/projects/${project}/jobs`, { description: 'remembered live' })).statusCode, 201);
  t.is((await adminA.patch(`/projects/${project}`, { deleted: true })).statusCode, 200);
  const refused = await eventually(
    () => adminB.post(`/projects/${project}/jobs`, { description: 'after the delete' }),
    (r) => r.statusCode !== 201,
  );
  t.is(refused.statusCode, 422);
  t.regex(refused.body.message, /is deleted/);
  t.is((await adminA.patch(`/projects/${project}`, { deleted: false })).statusCode, 200);
  const again = await eventually(
    () => adminB.post(`/projects/${project}/jobs`, { description: 'restored' }),
    (r) => r.statusCode === 201,
  );
  t.is(again.statusCode, 201);
  t.regex(again.body.id, /^memodel-[0-9a-f]{8}$/);
});

test.serial("a manifest synced through one replica gives the other's next job its defaults", async (t) => {
  const project = await newProject('memodef');
  t.is((await adminB.post(`/projects/${project}/jobs`, { description: 'no defaults yet' })).body.priority, 2);
  const synced = await adminA.post(`/projects/${project}/manifest`, { yaml: 'x-svc:\n  defaults:\n    priority: 0\n    labels: [from-manifest]\n' });
  t.is(synced.statusCode, 200, JSON.stringify(synced.body));
  const job = await eventually(
    () => adminB.post(`/projects/${project}/jobs`, { description: 'with defaults' }),
    (r) => r.body.priority === 0,
  );
  t.is(job.body.priority, 0);
  t.deepEqual(job.body.labels, ['from-manifest']);
});

test.serial("a monthly budget set through one replica refuses the other's next job", async (t) => {
  const project = await newProject('memobud');
  t.is((await adminB.post(`/projects/${project}/jobs`, { description: 'no budget yet' })).statusCode, 201);
  t.is((await adminA.patch(`/orgs/${orgId}/billing`, { monthly_budget: 0, budget_mode: 'refuse' })).statusCode, 200);
  const refused = await eventually(
    () => adminB.post(`/projects/${project}/jobs`, { description: 'over budget' }),
    (r) => r.statusCode !== 201,
  );
  t.is(refused.statusCode, 422);
  t.regex(refused.body.message, /over its monthly budget/);
  t.is((await adminA.patch(`/orgs/${orgId}/billing`, { monthly_budget: null })).statusCode, 200);
  t.is(
    (
      await eventually(
        () => adminB.post(`/projects/${project}/jobs`, { description: 'budget lifted' }),
        (r) => r.statusCode === 201,
      )
    ).statusCode,
    201,
  );
});

test.serial('a reconnect of the LISTEN forgets everything, since notices may have been missed', async (t) => {
  const memos = b.server.app.container.resolve(SharedMemos);
  const memo = memos.memo<number>('test-reconnect');
  let loads = 0;
  const load = async () => ++loads;
  t.is(await memo.get('k', load), 1);
  t.is(await memo.get('k', load), 1, 'remembered');
  memos.hear('');
  t.is(await memo.get('k', load), 2, 'read again after the reconnect notice');
  memos.hear('elsewhere/test-reconnect:other elsewhere/test-reconnect:k');
  t.is(await memo.get('k', load), 3, "another process's notice naming the key forgets it");
});

test.serial('a change committed while a value loads is answered but not remembered; a rolled back one forgets nothing', async (t) => {
  const memos = a.server.app.container.resolve(SharedMemos);
  const memo = memos.memo<string>('test-overtaken');
  let release!: () => void;
  const loading = memo.get('k', () => new Promise<string>((r) => (release = () => r('stale'))));
  memo.changed(a.kernel.db, 'k');
  release();
  t.is(await loading, 'stale');
  t.is(await memo.get('k', async () => 'fresh'), 'fresh', 'the overtaken load was not remembered');
  await a.kernel.db
    .transaction(async (trx) => {
      memo.changed(trx, 'k');
      throw new Error('roll back');
    })
    .catch(() => undefined);
  t.is(await memo.get('k', async () => 'unread'), 'fresh', 'a rolled back change forgets nothing');
});

test.serial("a gateway's model lookups and a secret's rows, remembered on one replica, follow a change made through the other", async (t) => {
  const resolverB = b.kernel.container.resolve(ModelResolver);
  const secretsB = b.kernel.container.resolve(SecretResolverToken);
  const system = { orgId: null, projectId: null };

  t.is((await adminA.post('/system/secrets', { name: 'MEMO_KEY', value: 'first' })).statusCode, 201);
  t.is(await secretsB.resolve('MEMO_KEY', { internal: true }), 'first');
  const created = await adminA.post('/inference/targets', { name: 'memo-t', kind: 'openai', base_url: 'http://127.0.0.1:9/v1', credential_secret: 'MEMO_KEY' });
  t.is(created.statusCode, 201);
  t.is((await resolverB.resolve('memo-t/m1', system)).target.base_url, 'http://127.0.0.1:9/v1');

  t.is((await adminA.patch(`/inference/targets/${created.body.id}`, { base_url: 'http://127.0.0.1:10/v1' })).statusCode, 200);
  t.is(
    (
      await eventually(
        () => resolverB.resolve('memo-t/m1', system),
        (r) => r.target.base_url !== 'http://127.0.0.1:9/v1',
      )
    ).target.base_url,
    'http://127.0.0.1:10/v1',
  );
  t.is((await call(a.server, 'PUT', '/system/secrets/MEMO_KEY', { value: 'second' }, token)).statusCode, 200);
  t.is(
    await eventually(
      () => secretsB.resolve('MEMO_KEY', { internal: true }),
      (v) => v === 'second',
    ),
    'second',
  );

  t.is((await adminA.delete(`/inference/targets/${created.body.id}`)).statusCode, 204);
  const gone = await eventually(
    () =>
      resolverB.resolve('memo-t/m1', system).then(
        () => 'found',
        (e: Error) => e.message,
      ),
    (v) => v !== 'found',
  );
  t.regex(gone, /model memo-t\/m1 not found/);
  t.is((await adminA.delete('/system/secrets/MEMO_KEY')).statusCode, 204);
  t.is(
    await eventually(
      () =>
        secretsB.resolve('MEMO_KEY', { internal: true }).then(
          () => 'found',
          (e: Error) => e.name,
        ),
      (v) => v !== 'found',
    ),
    'SecretMissing',
  );
});
