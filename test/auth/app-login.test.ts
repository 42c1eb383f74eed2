import test, { type ExecutionContext } from 'ava';
import { as, call } from '../support/server.ts';
import { memberOf, rows, setup, type Ctx, type User } from '../orgs/helpers.ts';
import { smtpSink } from '../support/smtp-sink.ts';

/**
 * App-side login over HTTP (x-svc.auth): sign-in links mailed through SMTP to a sink this test runs,
 * read back from the mail; self_signup, domain signup, app invites with allowed_orgs, passwords;
 * and the attacks: a reused link, an expired one, one used for another e-mail, a domain not allowed.
 */
const sink = smtpSink();
let ctx: Ctx;
let owner: User;
let orgId: string;
let otherOrgId: string;
let openApp: string;
let closedApp: string;

const manifest = (auth: string) => `registry: none
x-svc:
  branding: { app_name: Shop, primary_color: '#aa3300', support_email: help@shop.example.com }
  auth:
${auth}
`;

async function app(name: string, auth: string): Promise<string> {
  const project = await owner.api.post('/projects', { org_id: orgId, name, slug: name.replace(/[^a-z]/g, '').slice(0, 8) });
  if (project.statusCode !== 201) throw new Error(JSON.stringify(project.body));
  const synced = await owner.api.post(`/projects/${project.body.id}/manifest`, { yaml: manifest(auth) });
  if (synced.statusCode !== 200 && synced.statusCode !== 201) throw new Error(JSON.stringify(synced.body));
  return project.body.id;
}

const anon = (method: string, url: string, body?: unknown) => call(ctx.srv.server, method, url, body);

/** The token and e-mail of the newest sign-in mail to this address. */
function mailedLink(email: string): { token: string; email: string; data: string } {
  const mail = [...sink.received].reverse().find((m) => m.to.includes(email));
  if (!mail) throw new Error(`no mail to ${email}`);
  const fragment = /#(token=[^\s]+)/.exec(mail.data);
  const params = new URLSearchParams(fragment ? fragment[1] : '');
  const token = params.get('token') ?? /Your sign-in token: (\S+)/.exec(mail.data)?.[1];
  if (!token) throw new Error(`no token in ${mail.data}`);
  return { token, email: params.get('email') ?? email, data: mail.data };
}

/** The mail's HTML part is headed by the app's name on its primary colour, and names its support address. */
function brandedHtml(t: ExecutionContext, data: string): void {
  t.regex(data, /\r\nContent-Type: multipart\/alternative; boundary="[^"]+"\r\n/);
  const html = data.slice(data.indexOf('Content-Type: text/html; charset=utf-8'));
  t.true(html.includes('<div style="background:#aa3300;color:#ffffff;padding:12px 16px;font-size:18px;font-weight:bold">Shop</div>'), html);
  t.true(html.includes('Questions: help@shop.example.com'));
}

test.before(async () => {
  const port = await sink.listen();
  ctx = await setup({
    overrides: {
      server: { public_url: 'https://svc.example.com' },
      adapters: { mailer: { use: 'smtp', options: { host: '127.0.0.1', port, from: 'login@svc.example.com' } } },
    },
  });
  owner = await memberOf(ctx, ctx.lobbyId, 'app-owner', 'owner');
  orgId = (await owner.api.post('/orgs', { name: 'Shop Org', slug: 'shop-org' })).body.id;
  otherOrgId = (await owner.api.post('/orgs', { name: 'Elsewhere' })).body.id;
  openApp = await app(
    'open-shop',
    `    login_method: password_or_magic_link
    self_signup: true
    redirect_origins: ['https://shop.example.com']`,
  );
  closedApp = await app(
    'closed-shop',
    `    self_signup: false
    invite_requires_password: true
    org_access:
      invite: { enabled: true, allowed_orgs: [shop-org], invited_role: admin }
      domain_signup: { enabled: true, domains: [ { domain: corp.example.com, target_org: ${orgId}, role: member } ] }`,
  );
});
test.after.always(async () => {
  await ctx?.srv.stop();
  await sink.close();
});

test.serial("the app's public config: branding and sign-in settings; 404 for a project without x-svc.auth", async (t) => {
  const res = await anon('GET', `/auth/apps/${openApp}/config`);
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.like(res.body, {
    branding: { app_name: 'Shop', primary_color: '#aa3300', support_email: 'help@shop.example.com' },
    login_method: 'password_or_magic_link',
    self_signup: true,
    password_login_path: '/auth/password/login',
  });
  const plain = (await owner.api.post('/projects', { org_id: orgId, name: 'not-an-app', slug: 'notapp' })).body.id;
  t.is((await anon('GET', `/auth/apps/${plain}/config`)).statusCode, 404);
});

test.serial('self signup: the mailed link (to the app, token in the fragment) signs a new address in once; reusing it is 410', async (t) => {
  const email = 'new-shopper@example.com';
  const asked = await anon('POST', '/auth/magic-link', { project_id: openApp, email, redirect_url: 'https://shop.example.com/signed-in' });
  t.is(asked.statusCode, 202, JSON.stringify(asked.body));
  const link = mailedLink(email);
  t.regex(link.data, /\r\nSubject: Shop: your sign-in link\r\n/);
  t.true(link.data.includes('https://shop.example.com/signed-in#token='));
  t.true(link.data.includes('Questions: help@shop.example.com'));
  brandedHtml(t, link.data);
  // Stored hashed: the secret half of the token is nowhere in the table.
  const [id, secret] = link.token.split('.');
  const stored = await ctx.srv.kernel.db('magic_links').where({ id }).first();
  t.false(JSON.stringify(stored).includes(secret));

  const used = await anon('POST', '/auth/magic-link/verify', { token: link.token, email });
  t.is(used.statusCode, 200, JSON.stringify(used.body));
  t.is(used.body.user.email, email);
  t.is(used.body.redirect_url, 'https://shop.example.com/signed-in');
  t.is((await as(ctx.srv.server, used.body.access_token).get('/auth/me')).statusCode, 200);

  const again = await anon('POST', '/auth/magic-link/verify', { token: link.token, email });
  t.is(again.statusCode, 410);
  t.is(again.body.message, 'sign-in link already used');
});

test.serial('attacks: a link used with another e-mail, an expired link, a guessed secret; a redirect off the app', async (t) => {
  const email = 'victim-check@example.com';
  await anon('POST', '/auth/magic-link', { project_id: openApp, email });
  const link = mailedLink(email);
  t.true(link.data.includes('POST https://svc.example.com/auth/magic-link/verify'));

  const other = await anon('POST', '/auth/magic-link/verify', { token: link.token, email: 'attacker@example.com' });
  t.is(other.statusCode, 401);
  t.is(other.body.message, 'sign-in link is for another e-mail address');
  t.is(await rows(ctx, 'users', { email: 'attacker@example.com' }), 0);

  const [id] = link.token.split('.');
  const guessed = await anon('POST', '/auth/magic-link/verify', { token: `${id}.${'A'.repeat(43)}`, email });
  t.is(guessed.statusCode, 401);

  await ctx.srv.kernel
    .db('magic_links')
    .where({ id })
    .update({ expires_at: new Date(Date.now() - 1000) });
  const expired = await anon('POST', '/auth/magic-link/verify', { token: link.token, email });
  t.is(expired.statusCode, 410);
  t.is(expired.body.message, 'sign-in link expired');
  t.is(await rows(ctx, 'users', { email }), 0);

  const offsite = await anon('POST', '/auth/magic-link', { project_id: openApp, email, redirect_url: 'https://evil.example.net/x' });
  t.is(offsite.statusCode, 422);
  t.regex(offsite.body.message, /redirect_origins/);
});

test.serial('self_signup false: an unknown address gets the same answer, and nothing is stored or sent', async (t) => {
  const before = sink.received.length;
  const links = await rows(ctx, 'magic_links', {});
  const res = await anon('POST', '/auth/magic-link', { project_id: closedApp, email: 'stranger@example.com' });
  t.is(res.statusCode, 202);
  t.deepEqual(res.body, (await anon('POST', '/auth/magic-link', { project_id: openApp, email: 'stranger2@example.com' })).body);
  t.is(sink.received.length, before + 1); // only the open app's mail
  t.is(await rows(ctx, 'magic_links', {}), links + 1);
  t.is(await rows(ctx, 'users', { email: 'stranger@example.com' }), 0);
});

test.serial('domain signup: a matching domain joins the target org on first sign-in by a one-shot invite; other domains do not', async (t) => {
  const email = 'ana@corp.example.com';
  await anon('POST', '/auth/magic-link', { project_id: closedApp, email });
  const used = await anon('POST', '/auth/magic-link/verify', { token: mailedLink(email).token, email });
  t.is(used.statusCode, 200, JSON.stringify(used.body));
  t.deepEqual(used.body.orgs_joined, [orgId]);
  const invites = await owner.api.get(`/orgs/${orgId}/invites`);
  t.like(
    invites.body.data.find((i: { email: string }) => i.email === email),
    { source: 'domain_signup', status: 'accepted', role: 'member' },
  );
  const me = await as(ctx.srv.server, used.body.access_token).get('/auth/me');
  t.true(JSON.stringify(me.body).includes(orgId));

  const before = sink.received.length;
  const lookalike = await anon('POST', '/auth/magic-link', { project_id: closedApp, email: 'eve@corp.example.com.evil.net' });
  t.is(lookalike.statusCode, 202);
  t.is(sink.received.length, before);
  t.is(await rows(ctx, 'users', { email: 'eve@corp.example.com.evil.net' }), 0);
});

test.serial('app invites: only from allowed orgs, with the invited role; the invitee must choose a password, then logs in with it', async (t) => {
  const refused = await owner.api.post('/auth/app-invites', { org_id: otherOrgId, email: 'x@example.com', project_id: closedApp });
  t.is(refused.statusCode, 422);
  t.regex(refused.body.message, /allowed_orgs/);

  const email = 'invited-admin@example.com';
  const invite = await owner.api.post('/auth/app-invites', { org_id: orgId, email, project_id: closedApp });
  t.is(invite.statusCode, 201, JSON.stringify(invite.body));
  t.like(invite.body, { role: 'admin', email_sent: true, app: { app_name: 'Shop', project_id: closedApp } });
  t.regex(sink.received.at(-1)!.data, /\r\nSubject: Shop: invitation to Shop Org\r\n/);
  t.true(sink.received.at(-1)!.data.includes('Questions: help@shop.example.com'));
  brandedHtml(t, sink.received.at(-1)!.data);

  // The invite lets the address ask for a link although the app has no self signup.
  t.is((await anon('POST', '/auth/magic-link', { project_id: closedApp, email })).statusCode, 202);
  const link = mailedLink(email);
  const noPassword = await anon('POST', '/auth/magic-link/verify', { token: link.token, email });
  t.is(noPassword.statusCode, 422);
  t.regex(noPassword.body.message, /"password" is required/);
  const used = await anon('POST', '/auth/magic-link/verify', { token: link.token, email, password: 'correct horse battery' });
  t.is(used.statusCode, 200, JSON.stringify(used.body));
  t.deepEqual(used.body.orgs_joined, [orgId]);

  // closed-shop signs in with links only; the open app takes passwords.
  t.is((await anon('POST', '/auth/password/login', { project_id: closedApp, email, password: 'correct horse battery' })).statusCode, 422);
  const ok = await anon('POST', '/auth/password/login', { project_id: openApp, email, password: 'correct horse battery' });
  t.is(ok.statusCode, 200, JSON.stringify(ok.body));
  t.is(ok.body.user.email, email);
  const wrong = await anon('POST', '/auth/password/login', { project_id: openApp, email, password: 'wrong horse battery' });
  t.is(wrong.statusCode, 401);
  const nobody = await anon('POST', '/auth/password/login', { project_id: openApp, email: 'nobody@example.com', password: 'whatever12345' });
  t.is(nobody.statusCode, 401);
  t.is(nobody.body.message, wrong.body.message);
});

test.serial('bad input names the field', async (t) => {
  const res = await anon('POST', '/auth/magic-link/verify', { token: 'nope', email: 'a@example.com' });
  t.is(res.statusCode, 400);
  t.regex(res.body.message, /token/);
});
