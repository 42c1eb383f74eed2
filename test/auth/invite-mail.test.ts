import test from 'ava';
import { createServer, type Server, type Socket } from 'node:net';
import { newUser, setup, type Ctx, type User } from '../orgs/helpers.ts';

/** Invites go out through the SMTP mailer to a local SMTP server this test runs (node:net). */
interface Received {
  from: string;
  to: string[];
  data: string;
  auth: string | null;
}

/** A small SMTP server: EHLO, AUTH PLAIN, MAIL, RCPT, DATA, QUIT; `refuseRcpt` answers 550 to recipients. */
function smtpSink() {
  const received: Received[] = [];
  const state = { refuseRcpt: false };
  const server: Server = createServer((socket: Socket) => {
    let current: Received = { from: '', to: [], data: '', auth: null };
    let inData = false;
    let buffer = '';
    const say = (line: string) => socket.write(`${line}\r\n`);
    say('220 sink.test ESMTP ready');
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      for (;;) {
        if (inData) {
          const end = buffer.indexOf('\r\n.\r\n');
          if (end < 0) return;
          current.data = buffer.slice(0, end + 2);
          buffer = buffer.slice(end + 5);
          inData = false;
          received.push(current);
          current = { from: '', to: [], data: '', auth: current.auth };
          say('250 2.0.0 queued');
          continue;
        }
        const eol = buffer.indexOf('\r\n');
        if (eol < 0) return;
        const line = buffer.slice(0, eol);
        buffer = buffer.slice(eol + 2);
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === 'EHLO') socket.write('250-sink.test\r\n250-AUTH PLAIN\r\n250 8BITMIME\r\n');
        else if (verb === 'AUTH') ((current.auth = Buffer.from(line.split(' ')[2], 'base64').toString()), say('235 2.7.0 ok'));
        else if (verb === 'MAIL') ((current.from = /<(.*)>/.exec(line)![1]), say('250 ok'));
        else if (verb === 'RCPT') state.refuseRcpt ? say('550 5.1.1 no such user') : (current.to.push(/<(.*)>/.exec(line)![1]), say('250 ok'));
        else if (verb === 'DATA') ((inData = true), say('354 go ahead'));
        else if (verb === 'QUIT') (say('221 bye'), socket.end());
        else say('502 not implemented');
      }
    });
  });
  return {
    received,
    state,
    listen: () => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port))),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

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
