/**
 * Issue 29, item 6: one member token created 10,000 jobs in 36 s. Request rate limits per caller
 * (a token bucket shared by every api replica through PostgreSQL) and per-org quotas, attacked
 * over HTTP: the hammering caller gets 429 with Retry-After and RateLimit-* after its burst, other
 * callers do not; two api servers on one database share the bucket; a quota refuses naming itself
 * and writes nothing.
 */
import test from 'ava';
import { as, bootstrapAdmin, startTestServer, userInOrg, type Reply, type TestServer } from '../support/server.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

const BURST = 20;
const BATCH = 5;
/** Slow enough that the refill during a test adds a handful of tokens at most. */
const PER_SECOND = 1;
const requests = { enabled: true, per_second: PER_SECOND, burst: BURST, batch: BATCH, lease_ms: 1000 };

let database: TestDatabase;
let one: TestServer;
let two: TestServer;
let adminToken: string;
let orgA: string;
let orgB: string;
let projectA: string;
let projectB: string;

test.before(async () => {
  database = await createTestDatabase();
  one = await startTestServer({ database, overrides: { limits: { requests } } });
  two = await startTestServer({ database, overrides: { limits: { requests } } });
  adminToken = (await bootstrapAdmin(one.server)).token;
  const admin = as(one.server, adminToken);
  orgA = (await admin.post('/orgs', { name: 'Hammer' })).body.id;
  orgB = (await admin.post('/orgs', { name: 'Bystander' })).body.id;
  projectA = (await admin.post('/projects', { org_id: orgA, name: 'hammer', slug: 'hammer' })).body.id;
  projectB = (await admin.post('/projects', { org_id: orgB, name: 'bystand', slug: 'bystand' })).body.id;
});

test.after.always(async () => {
  await one?.stop();
  await two?.stop();
  await database?.drop();
});

/** A member of `org`'s token (a new user per call). */
const memberOf = (org: string, email: string) => userInOrg(one.server, adminToken, org, email, 'member');

const createJob = (server: TestServer, token: string, projectId: string, n: number) =>
  as(server.server, token).post(`/projects/${projectId}/jobs`, { description: `job ${n}`, phase: 'backlog' });

test.serial('a member hammering job creation gets 429 with Retry-After and RateLimit-* after the burst; others are unaffected', async (t) => {
  const hammer = await memberOf(orgA, 'hammer@example.com');
  const started = Date.now();
  const replies: Reply[] = [];
  for (let i = 0; i < BURST * 2; i++) replies.push(await createJob(one, hammer, projectA, i));
  const elapsed = (Date.now() - started) / 1000;
  const created = replies.filter((r) => r.statusCode === 201).length;
  const refused = replies.filter((r) => r.statusCode === 429);
  t.true(created >= BURST - BATCH, `about the burst is admitted: ${created}`);
  t.true(created <= BURST + Math.ceil(elapsed * PER_SECOND) + 1, `no more than the burst and the refill: ${created} in ${elapsed} s`);
  t.true(refused.length > 0, 'the rest is 429');
  const last = replies.at(-1)!;
  t.is(last.statusCode, 429, JSON.stringify(last.body));
  t.regex(String(last.body.message), /rate limit exceeded/);
  t.true(Number(last.headers['retry-after']) >= 1, `Retry-After: ${last.headers['retry-after']}`);
  t.is(last.headers['ratelimit-limit'], String(BURST));
  t.is(last.headers['ratelimit-remaining'], '0');
  t.true(Number(last.headers['ratelimit-reset']) >= 1);
  // An admitted answer carries the headers too.
  t.is(replies[0].headers['ratelimit-limit'], String(BURST));
  t.true(Number(replies[0].headers['ratelimit-remaining']) < BURST);
  // Nothing was written by the refused requests.
  const admin = as(one.server, adminToken);
  const total = (await admin.get(`/projects/${projectA}/jobs?limit=1`)).body.pagination.total;
  t.is(total, created, 'one job per 201, none per 429');

  // Other callers have buckets of their own: the bystander of another org, and the administrator.
  const bystander = await memberOf(orgB, 'bystander@example.com');
  const other = await createJob(one, bystander, projectB, 0);
  t.is(other.statusCode, 201, JSON.stringify(other.body));
  t.is((await admin.get(`/projects/${projectA}`)).statusCode, 200);
  // Health checks are never limited.
  const health = await as(one.server).get('/health');
  t.not(health.statusCode, 429);
  t.is(health.headers['ratelimit-limit'], undefined);
});

test.serial('two api servers on one database share one bucket per caller', async (t) => {
  const shared = await memberOf(orgA, 'shared@example.com');
  const started = Date.now();
  let created = 0;
  for (let i = 0; i < BURST * 2; i++) {
    const res = await createJob(i % 2 ? two : one, shared, projectA, i);
    if (res.statusCode === 201) created++;
    else t.is(res.statusCode, 429, JSON.stringify(res.body));
  }
  const elapsed = (Date.now() - started) / 1000;
  // Per process buckets would admit 2 × BURST; a shared one the burst, the refill, and what the
  // other process still holds of its last lease.
  t.true(created <= BURST + Math.ceil(elapsed * PER_SECOND) + BATCH, `${created} admitted across two servers in ${elapsed} s`);
  t.true(created >= BURST - 2 * BATCH, `${created} admitted`);
  for (const server of [one, two]) t.is((await createJob(server, shared, projectA, 99)).statusCode, 429);
});

test.serial("failed authentications count against the caller's address: a flood of bad tokens gets 429 with Retry-After", async (t) => {
  const from = (remoteAddress: string, authorization: string, url = `/projects/${projectB}`) =>
    one.server.inject({ method: 'GET', url, headers: { authorization }, remoteAddress });
  const guesser = '203.0.113.7';
  const forged = `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from('{"sub":"x"}').toString('base64url')}.c2ln`;
  const guesses = ['Bearer not-a-jwt', `Bearer ${forged}`, 'Basic dXNlcjpwYXNz'];
  const replies = [];
  const started = Date.now();
  for (let i = 0; i < BURST * 2; i++) replies.push(await from(guesser, guesses[i % guesses.length]));
  const elapsed = (Date.now() - started) / 1000;
  const codes = replies.map((r) => r.statusCode);
  t.true(
    codes.slice(0, BURST - BATCH).every((c) => c === 401),
    `the burst is answered 401: ${codes}`,
  );
  t.true(
    codes.every((c) => c === 401 || c === 429),
    `${codes}`,
  );
  const last = replies.at(-1)!;
  t.is(last.statusCode, 429, last.payload);
  t.regex(JSON.parse(last.payload).message, /rate limit exceeded/);
  t.true(Number(last.headers['retry-after']) >= 1, `Retry-After: ${last.headers['retry-after']}`);
  t.is(last.headers['ratelimit-remaining'], '0');
  const answered = codes.filter((c) => c === 401).length;
  t.true(answered <= BURST + Math.ceil(elapsed * PER_SECOND) + 1, `no more guesses than the burst and the refill: ${answered} in ${elapsed} s`);
  // The guesser's address is spent, for requests without a token too; another address and a valid token are not.
  t.is((await one.server.inject({ method: 'GET', url: '/orgs', remoteAddress: guesser })).statusCode, 429);
  t.is((await from('203.0.113.8', 'Bearer not-a-jwt')).statusCode, 401);
  const member = await memberOf(orgB, 'after-guessing@example.com');
  t.is((await from(guesser, `Bearer ${member}`)).statusCode, 200, 'a real token from that address draws from its own bucket');
});

// Behind a reverse proxy: server.trusted_proxies.

test.serial(
  'X-Forwarded-For names the client only when the direct peer is a trusted proxy: clients behind it get buckets of their own; nobody else can choose one',
  async (t) => {
    const proxied = await startTestServer({ database, overrides: { limits: { requests }, server: { trusted_proxies: ['10.0.0.0/8', 'fd00::1'] } } });
    try {
      const get = (remoteAddress: string, forwardedFor?: string) =>
        proxied.server.inject({
          method: 'GET',
          url: '/.well-known/jwks.json',
          remoteAddress,
          headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
        });
      const drain = async (send: (i: number) => ReturnType<typeof get>) => {
        const codes: number[] = [];
        for (let i = 0; i < BURST * 2; i++) codes.push((await send(i)).statusCode);
        return codes;
      };

      // An untrusted peer cannot pick a bucket by writing the header: every request is the peer's own.
      const untrusted = await drain((i) => get('203.0.113.50', `198.51.100.${i + 1}`));
      t.is(untrusted.at(-1), 429, `${untrusted}`);
      t.true(untrusted.filter((c) => c === 200).length <= BURST + BATCH, `${untrusted}`);

      // Through the trusted proxy (IPv4 and an IPv6 address, mapped forms too) each client has its own bucket.
      const hammer = await drain((i) => get(i % 2 ? '10.1.2.3' : '::ffff:10.9.9.9', '192.0.2.7'));
      t.is(hammer.at(-1), 429, `${hammer}`);
      t.is((await get('10.1.2.3', '192.0.2.8')).statusCode, 200, 'another client behind the same proxy');
      t.is((await get('fd00::1', '192.0.2.9')).statusCode, 200);
      // A client that writes its own X-Forwarded-For through the proxy: the proxy appends the address
      // it saw, and that one (the rightmost untrusted hop) is the bucket, whatever came before it.
      t.is((await get('10.1.2.3', '192.0.2.10, 192.0.2.7')).statusCode, 429, 'a forged hop left of the real one changes nothing');
      t.is((await get('10.1.2.3', '192.0.2.7, 10.4.4.4')).statusCode, 429, 'hops through a chain of trusted proxies');
      // The proxy itself, with no header, is a client by its own address; a hop that is not an address stops the walk there.
      t.is((await get('10.1.2.3')).statusCode, 200);
      t.is((await get('10.1.2.3', 'junk, 192.0.2.7')).statusCode, 429);
      t.is((await get('10.1.2.3', '192.0.2.7, junk')).statusCode, 200, 'not the client: the nearest trusted hop (the proxy)');

      // A peer outside the trusted ranges (fd00::2 is not fd00::1) is its own client whatever its header says.
      t.is((await get('fd00::2', '192.0.2.8')).statusCode, 200);
    } finally {
      await proxied.stop();
    }
  },
);

test('server.trusted_proxies takes addresses and CIDRs only: anything else fails the boot naming the key', async (t) => {
  for (const bad of ['proxy.internal', '10.0.0.0/33', '10.0.0.0/8/1', 'fd00::/129'])
    await t.throwsAsync(
      startTestServer({ overrides: { server: { trusted_proxies: [bad] } } }),
      { message: /server\.trusted_proxies\[0\]" must be an IP address or a CIDR/ },
      bad,
    );
});

// Quotas: a server of its own (request limits off), with small per-org quotas.

const QUOTAS = { queued_jobs: 3, running_attempts: 1000, webhooks: 2, environments: 2 };

async function quotaServer() {
  const s = await startTestServer({ overrides: { limits: { org: QUOTAS } } });
  const token = (await bootstrapAdmin(s.server)).token;
  const admin = as(s.server, token);
  const org = (await admin.post('/orgs', { name: 'Quota' })).body.id;
  const other = (await admin.post('/orgs', { name: 'Other' })).body.id;
  const project = (await admin.post('/projects', { org_id: org, name: 'quota', slug: 'quota' })).body.id;
  const otherProject = (await admin.post('/projects', { org_id: other, name: 'other', slug: 'other' })).body.id;
  const member = as(s.server, await userInOrg(s.server, token, org, 'quota@example.com', 'owner'));
  return { s, admin, member, org, other, project, otherProject };
}

test.serial('quotas: queued jobs (429), webhooks and environments (422) refuse naming the quota, and nothing is written', async (t) => {
  const q = await quotaServer();
  try {
    const jobs = async (project: string) => (await q.admin.get(`/projects/${project}/jobs?limit=1`)).body.pagination.total as number;
    for (let i = 0; i < QUOTAS.queued_jobs; i++) t.is((await q.member.post(`/projects/${q.project}/jobs`, { description: `queued ${i}` })).statusCode, 201);
    const refused = await q.member.post(`/projects/${q.project}/jobs`, { description: 'one too many' });
    t.is(refused.statusCode, 429, JSON.stringify(refused.body));
    t.is(refused.body.message, `quota exceeded: org ${q.org} has 3 queued jobs (limits.org.queued_jobs 3)`);
    t.is(await jobs(q.project), QUOTAS.queued_jobs, 'no job written');
    // Another org is not affected; the admin is held to the org's quota like anyone.
    t.is((await q.admin.post(`/projects/${q.otherProject}/jobs`, { description: 'elsewhere' })).statusCode, 201);
    t.is((await q.admin.post(`/projects/${q.project}/jobs`, { description: 'admin too' })).statusCode, 429);

    const hook = { url: 'http://127.0.0.1:9/hook', events: ['*'], secret: 'x'.repeat(16) };
    for (let i = 0; i < QUOTAS.webhooks; i++) t.is((await q.member.post(`/orgs/${q.org}/webhooks`, hook)).statusCode, 201);
    const hooks = async () => (await q.admin.get(`/orgs/${q.org}/webhooks?limit=1`)).body.pagination.total as number;
    const noHook = await q.member.post(`/projects/${q.project}/webhooks`, hook);
    t.is(noHook.statusCode, 422, JSON.stringify(noHook.body));
    t.is(noHook.body.message, `quota exceeded: org ${q.org} has 2 webhooks (limits.org.webhooks 2)`);
    t.is(await hooks(), QUOTAS.webhooks, 'no subscription written');
    t.is((await q.admin.post(`/orgs/${q.other}/webhooks`, hook)).statusCode, 201);

    for (let i = 0; i < QUOTAS.environments; i++) t.is((await q.member.post(`/projects/${q.project}/environments`, { name: `pr-${i}` })).statusCode, 201);
    const noEnv = await q.member.post(`/projects/${q.project}/environments`, { name: 'pr-9' });
    t.is(noEnv.statusCode, 422, JSON.stringify(noEnv.body));
    t.is(noEnv.body.message, `quota exceeded: org ${q.org} has 2 environments (limits.org.environments 2)`);
    t.is((await q.member.post(`/projects/${q.project}/environments/ensure`, { name: 'pr-0' })).statusCode, 200, 'an existing one is still ensured');
    t.is((await q.admin.get(`/projects/${q.project}/environments?limit=1`)).body.pagination.total, QUOTAS.environments, 'no environment written');
  } finally {
    await q.s.stop();
  }
});

test.serial('quotas hold under concurrent creation: parallel webhook and environment creations never pass the quota', async (t) => {
  const q = await quotaServer();
  try {
    const hook = { url: 'http://127.0.0.1:9/hook', events: ['*'], secret: 'x'.repeat(16) };
    const hooks = await Promise.all(Array.from({ length: 8 }, () => q.member.post(`/orgs/${q.org}/webhooks`, hook)));
    t.is(hooks.filter((r) => r.statusCode === 201).length, QUOTAS.webhooks);
    t.true(hooks.every((r) => r.statusCode === 201 || r.statusCode === 422));
    const envs = await Promise.all(Array.from({ length: 8 }, (_, i) => q.member.post(`/projects/${q.project}/environments`, { name: `race-${i}` })));
    t.is(envs.filter((r) => r.statusCode === 201).length, QUOTAS.environments);
    t.true(envs.every((r) => r.statusCode === 201 || r.statusCode === 422));
  } finally {
    await q.s.stop();
  }
});
