import test from 'ava';
import { newUser, setup, type Ctx, type User } from '../orgs/helpers.ts';
import { smtpSink } from '../support/smtp-sink.ts';

/** Invites go out through the SMTP mailer to a local SMTP server this test runs (test/support/smtp-sink.ts). */
const sink = smtpSink();
let ctx: Ctx;
let owner: User;
let orgId: string;

test.before(async () => {
  const port = await sink.listen();
  ctx = await setup({
    overrides: {
      server: { public_url: 'https://svc.example.com' },
      adapters: { mailer: { use: 'smtp', options: { host: '127.0.0.1', port, from: 'invites@svc.example.com', username: 'svc', password: 's3cret' } } },
    },
  });
  owner = await newUser(ctx, 'mail-owner');
  orgId = (await owner.api.post('/orgs', { name: 'Mail Org' })).body.id;
});
test.after.always(async () => {
  await ctx?.srv.stop();
  await sink.close();
});

test.serial('an invite with an e-mail is mailed through SMTP: the code, how to accept it, until when; email_sent true', async (t) => {
  const invitee = await newUser(ctx, 'mail-invitee');
  const res = await owner.api.post('/auth/invites', { org_id: orgId, role: 'member', email: invitee.email });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.true(res.body.email_sent);
  const mail = sink.received.at(-1)!;
  t.is(mail.from, 'invites@svc.example.com');
  t.deepEqual(mail.to, [invitee.email]);
  t.is(mail.auth, '\0svc\0s3cret');
  t.true(mail.data.startsWith(`From: invites@svc.example.com\r\nTo: ${invitee.email}\r\nSubject: svc: invitation to Mail Org\r\n`));
  t.true(mail.data.includes(`Your invite code: ${res.body.code}`));
  t.true(mail.data.includes(`POST https://svc.example.com/auth/invites/${res.body.code}/accept`));
  t.true(mail.data.includes(`until ${res.body.expires_at}`));

  // The mailed code works: the invitee signs in and accepts it.
  const accepted = await invitee.api.post(`/auth/invites/${res.body.code}/accept`, {});
  t.is(accepted.statusCode, 200, JSON.stringify(accepted.body));
});

test.serial('an app invite speaks for the app (name, support address) and carries its redirect', async (t) => {
  const res = await owner.api.post('/auth/app-invites', {
    org_id: orgId,
    email: 'shopper@example.com',
    app: { app_name: 'Shop', support_email: 'help@shop.example.com' },
    redirect_url: 'https://shop.example.com/welcome',
  });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.true(res.body.email_sent);
  const mail = sink.received.at(-1)!;
  t.deepEqual(mail.to, ['shopper@example.com']);
  t.regex(mail.data, /\r\nSubject: Shop: invitation to Mail Org\r\n/);
  t.true(mail.data.includes('on Shop as member'));
  t.true(mail.data.includes('Then continue at https://shop.example.com/welcome'));
  t.true(mail.data.includes('Questions: help@shop.example.com'));
});

test.serial('a refused recipient leaves the invite made and says email_sent false; no e-mail, no mail', async (t) => {
  const before = sink.received.length;
  sink.state.refuseRcpt = true;
  try {
    const refused = await owner.api.post('/auth/invites', { org_id: orgId, role: 'member', email: 'nobody@example.com' });
    t.is(refused.statusCode, 201);
    t.false(refused.body.email_sent);
    t.truthy(refused.body.code);
  } finally {
    sink.state.refuseRcpt = false;
  }
  const noEmail = await owner.api.post('/auth/invites', { org_id: orgId, role: 'member', identity_hint: 'octocat' });
  t.false(noEmail.body.email_sent);
  t.is(sink.received.length, before);
});

test.serial("an app invite's HTML part shows the app's name escaped, on its colour", async (t) => {
  const res = await owner.api.post('/auth/app-invites', {
    org_id: orgId,
    email: 'html-shopper@example.com',
    app: { app_name: '<b>Shop</b> & Co', primary_color: '#00aa55' },
  });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  const html = sink.received.at(-1)!.data.split('Content-Type: text/html; charset=utf-8')[1];
  t.truthy(html);
  t.true(html.includes('background:#00aa55'));
  t.true(html.includes('&#60;b&#62;Shop&#60;/b&#62; &#38; Co'));
  t.false(html.includes('<b>Shop'));
});
