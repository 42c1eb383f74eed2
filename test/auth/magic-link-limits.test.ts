import test from 'ava';
import { memberOf, setup, type Ctx, type User } from '../orgs/helpers.ts';
import { smtpSink } from '../support/smtp-sink.ts';

/**
 * POST /auth/magic-link is bounded per e-mail and per client address (auth.magic_link_limits): over
 * a limit, 429 with Retry-After and no mail; known and unknown addresses are counted and refused alike.
 */
const sink = smtpSink();
let ctx: Ctx;
let owner: User;
let openApp: string;
let closedApp: string;

async function app(org: string, name: string, selfSignup: boolean): Promise<string> {
  const project = await owner.api.post('/projects', { org_id: org, name, slug: name });
  if (project.statusCode !== 201) throw new Error(JSON.stringify(project.body));
  const yaml = `registry: none\nx-svc:\n  branding: { app_name: Shop }\n  auth:\n    self_signup: ${selfSignup}\n`;
  const synced = await owner.api.post(`/projects/${project.body.id}/manifest`, { yaml });
  if (synced.statusCode >= 300) throw new Error(JSON.stringify(synced.body));
  return project.body.id;
}

/** Asks for a link from `address` (the client address the limit counts). */
async function ask(address: string, projectId: string, email: string) {
  const res = await ctx.srv.server.inject({ method: 'POST', url: '/auth/magic-link', payload: { project_id: projectId, email }, remoteAddress: address });
  return { statusCode: res.statusCode, body: JSON.parse(res.payload), headers: res.headers };
}
const mailsTo = (email: string) => sink.received.filter((m) => m.to.includes(email)).length;

test.before(async () => {
  const port = await sink.listen();
  ctx = await setup({
    overrides: {
      auth: { magic_link_limits: { window_seconds: 60, per_email: 2, per_address: 5 } },
      adapters: { mailer: { use: 'smtp', options: { host: '127.0.0.1', port, from: 'login@svc.example.com' } } },
    },
  });
  owner = await memberOf(ctx, ctx.lobbyId, 'limits-owner', 'owner');
  const org = (await owner.api.post('/orgs', { name: 'Limits Org' })).body.id;
  openApp = await app(org, 'limopen', true);
  closedApp = await app(org, 'limshut', false);
});
test.after.always(async () => {
  await ctx?.srv.stop();
  await sink.close();
});

test.serial('per e-mail: over the limit is 429 with Retry-After and no mail, in any case of the address, until the window ends', async (t) => {
  const email = 'flooded@example.com';
  for (let i = 0; i < 2; i++) t.is((await ask('10.1.0.1', openApp, email)).statusCode, 202);
  t.is(mailsTo(email), 2);
  const refused = await ask('10.1.0.2', openApp, 'FLOODED@example.com');
  t.is(refused.statusCode, 429, JSON.stringify(refused.body));
  const retry = Number(refused.headers['retry-after']);
  t.true(retry >= 1 && retry <= 60, String(refused.headers['retry-after']));
  t.false(JSON.stringify(refused.body).toLowerCase().includes('flooded'), 'the answer does not echo the address');
  t.is(mailsTo(email), 2, 'no mail over the limit');

  // The window ends: the address may ask again.
  await ctx.srv.kernel.db('magic_link_limits').update({ window_start: ctx.srv.kernel.db.raw("now() - interval '61 seconds'") });
  t.is((await ask('10.1.0.3', openApp, email)).statusCode, 202);
  t.is(mailsTo(email), 3);
});

test.serial('an address that may not sign in is counted and refused the same way: the answers tell nothing', async (t) => {
  const known = 'known-limits@example.com';
  const unknown = 'nobody-limits@example.com';
  const answers = [];
  for (const email of [known, unknown]) {
    const project = email === known ? openApp : closedApp;
    const seen = [];
    for (let i = 0; i < 3; i++) seen.push(await ask(`10.2.0.${email === known ? 1 : 2}`, project, email));
    t.deepEqual(
      seen.map((r) => r.statusCode),
      [202, 202, 429],
    );
    answers.push(seen.map((r) => r.body));
  }
  t.deepEqual(answers[0], answers[1], 'the same bodies for a known and an unknown address');
  t.is(mailsTo(known), 2);
  t.is(mailsTo(unknown), 0);
});

test.serial('per client address: different e-mails from one address are bounded too', async (t) => {
  const from = '10.3.0.1';
  for (let i = 0; i < 5; i++) t.is((await ask(from, openApp, `spread-${i}@example.com`)).statusCode, 202);
  const refused = await ask(from, openApp, 'spread-5@example.com');
  t.is(refused.statusCode, 429);
  t.truthy(refused.headers['retry-after']);
  t.is(mailsTo('spread-5@example.com'), 0);
  t.is((await ask('10.3.0.2', openApp, 'spread-5@example.com')).statusCode, 202, 'another address is not affected');
});
