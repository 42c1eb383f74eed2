import test from 'ava';
import { networkInterfaces } from 'node:os';
import { AddressGuard, UrlRefused } from '../../plugins/webhooks/address-guard.ts';
import { emit, receiver, sleep, subscribe, until, webhookWorld, deliveriesOf, type Receiver, type WebhookWorld } from './helpers.ts';

const strict = new AddressGuard({ allowLoopback: false, allowPrivate: false, allowedHosts: [] });
const lenient = new AddressGuard({ allowLoopback: true, allowPrivate: true, allowedHosts: [] });

test('link-local, metadata, unspecified and multicast addresses are always refused', (t) => {
  for (const address of [
    '169.254.169.254',
    '169.254.0.1',
    '100.100.100.200',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    'fe80::1',
    'fd00:ec2::254',
    '::',
    'ff02::1',
    '::ffff:169.254.169.254',
    '::ffff:a9fe:a9fe',
  ]) {
    t.truthy(lenient.refusal(address), address);
  }
  t.is(lenient.refusal('169.254.169.254'), 'a link-local (cloud metadata) address');
});

test("loopback and the host's own addresses depend on allow_loopback; private ranges on allow_private", (t) => {
  const own = Object.values(networkInterfaces())
    .flatMap((l) => l ?? [])
    .map((i) => i.address.replace(/%.*$/, ''))
    .filter((a) => !a.startsWith('127.') && a !== '::1' && !a.startsWith('fe80'));
  for (const address of ['127.0.0.1', '127.5.5.5', '::1', '::ffff:127.0.0.1', ...own]) {
    t.is(strict.refusal(address), "this service's own address", address);
    t.is(lenient.refusal(address), null, address);
  }
  for (const address of ['10.1.2.3', '172.20.0.1', '192.168.1.1', '100.64.0.1', 'fd12::1']) {
    if (own.includes(address)) continue;
    t.is(strict.refusal(address), 'a private address', address);
    t.is(lenient.refusal(address), null, address);
  }
  for (const address of ['8.8.8.8', '2001:4860:4860::8888', '192.0.2.10']) t.is(strict.refusal(address), null, address);
});

test('allowed_hosts exempts names, addresses and ranges', async (t) => {
  const guard = new AddressGuard({ allowLoopback: false, allowPrivate: true, allowedHosts: ['localhost', '169.254.169.254', '127.0.0.0/8'] });
  t.is(guard.refusal('169.254.169.254'), null);
  t.truthy(guard.refusal('169.254.169.253'));
  t.is(guard.refusal('127.0.0.9'), null);
  await t.notThrowsAsync(() => guard.check(new URL('http://localhost:1/')));
});

test('check resolves names: a name resolving to a refused address is refused, an unknown name too', async (t) => {
  const err = await t.throwsAsync(() => strict.check(new URL('http://localhost:8080/x')), { instanceOf: UrlRefused });
  t.regex(err!.message, /^localhost resolves to (127\.0\.0\.1|::1), this service's own address$/);
  await t.throwsAsync(() => strict.check(new URL('http://[::1]/')), { message: "::1 is this service's own address" });
  await t.throwsAsync(() => lenient.check(new URL('http://169.254.169.254/latest/meta-data')), {
    message: '169.254.169.254 is a link-local (cloud metadata) address',
  });
  await t.throwsAsync(() => lenient.check(new URL('http://svc-no-such-host.invalid/')), { message: /^svc-no-such-host\.invalid does not resolve/ });
  await t.notThrowsAsync(() => lenient.check(new URL('http://localhost/')));
});

let w: WebhookWorld;
let rx: Receiver;
test.before(async () => {
  w = await webhookWorld('whssrf', { overrides: { webhooks: { allow_loopback: false } } });
  rx = await receiver();
});
test.after.always(async () => {
  await rx?.close();
  await w?.srv.stop();
});

test.serial('create refuses URLs that reach internal addresses (422) and writes nothing', async (t) => {
  const port = new URL(rx.url).port;
  const cases: [string, RegExp][] = [
    [rx.url, /^url refused: 127\.0\.0\.1 is this service's own address$/],
    [`http://localhost:${port}/hook`, /^url refused: localhost resolves to .*, this service's own address$/],
    ['http://169.254.169.254/latest/meta-data/', /^url refused: 169\.254\.169\.254 is a link-local/],
    ['http://[fe80::1]/', /^url refused: fe80::1 is a link-local address$/],
    ['http://[::ffff:169.254.169.254]/', /^url refused: ::ffff:a9fe:a9fe is a link-local/],
    ['http://0.0.0.0:8080/', /^url refused: 0\.0\.0\.0 is an unspecified address$/],
    ['https://svc-no-such-host.invalid/hook', /^url refused: svc-no-such-host\.invalid does not resolve/],
  ];
  for (const [url, message] of cases) {
    const res = await w.owner.api.post(`/orgs/${w.orgA}/webhooks`, { url, events: ['*'], secret: 'x'.repeat(16) });
    t.is(res.statusCode, 422, url);
    t.regex(res.body.message, message);
  }
  t.is(Number((await w.db('webhook_subscriptions').count({ n: '*' }).first())!.n), 0);
});

test.serial('at send the address is checked again on every connection (a name that now resolves inside is refused)', async (t) => {
  const sub = await subscribe(w, { url: 'http://192.0.2.10/hook', events: ['manual.ssrf'] });
  const port = new URL(rx.url).port;
  for (const [url, error] of [
    [`http://localhost:${port}/hook`, /^localhost resolves to .*, this service's own address$/],
    ['http://169.254.169.254/latest', /^169\.254\.169\.254 is a link-local/],
  ] as const) {
    await w.db('webhook_subscriptions').where({ id: sub.id }).update({ url });
    const event = await emit(w, { type: 'manual.ssrf' });
    const delivery = await until(async () => (await deliveriesOf(w, sub.id)).find((d) => d.event_id === event.id && d.attempts >= 1), 'the attempt');
    t.like(delivery, { response_status: null });
    t.regex(delivery.error, error);
  }
  await sleep(200);
  t.is(rx.received.length, 0, 'nothing reached the receiver');
});
