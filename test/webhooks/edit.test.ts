import test from 'ava';
import { SECRET, emit, receiver, subscribe, svcSignatureValid, until, webhookWorld, type Receiver, type WebhookWorld } from './helpers.ts';

/** A subscription's URL, events, filter and enabled change in place; its secret is rotated apart and never shown. */
let w: WebhookWorld;
let rx: Receiver;
test.before(async () => {
  w = await webhookWorld('whedit');
  rx = await receiver();
});
test.after.always(async () => {
  await rx?.close();
  await w?.srv.stop();
});

const path = (id: string) => `/orgs/${w.orgA}/webhooks/${id}`;

test.serial('PATCH moves deliveries to the new URL and events; rotate-secret signs the next delivery with the new secret', async (t) => {
  const sub = await subscribe(w, { url: `${rx.url}/old`, events: ['manual.before'] });
  const edited = await w.owner.api.patch(path(sub.id), { url: `${rx.url}/new`, events: ['manual.after'] });
  t.is(edited.statusCode, 200, JSON.stringify(edited.body));
  t.like(edited.body, { id: sub.id, url: `${rx.url}/new`, events: ['manual.after'] });
  t.false('secret' in edited.body);
  await emit(w, { type: 'manual.before', payload: {} });
  await emit(w, { type: 'manual.after', payload: { n: 1 } });
  const first = await until(async () => rx.received.find((r) => r.path === '/hook/new'), 'a delivery to the new URL');
  t.true(svcSignatureValid(first, SECRET));
  t.false(
    rx.received.some((r) => r.path === '/hook/old'),
    'the old URL and event type get nothing',
  );

  const NEW_SECRET = 'a-rotated-subscription-secret-987';
  const rotated = await w.owner.api.post(`${path(sub.id)}/rotate-secret`, { secret: NEW_SECRET });
  t.is(rotated.statusCode, 200, JSON.stringify(rotated.body));
  t.false(JSON.stringify(rotated.body).includes(NEW_SECRET), 'the secret is never echoed');
  const count = rx.received.length;
  await emit(w, { type: 'manual.after', payload: { n: 2 } });
  const second = await until(async () => rx.received[count], 'the delivery after rotation');
  t.true(svcSignatureValid(second, NEW_SECRET));
  t.false(svcSignatureValid(second, SECRET));
});

test.serial('enabled: false stops deliveries and says why; enabled: true resumes them', async (t) => {
  const sub = await subscribe(w, { url: `${rx.url}/toggle`, events: ['manual.toggle'] });
  const off = await w.owner.api.patch(path(sub.id), { enabled: false });
  t.like(off.body, { enabled: false, disabled_reason: 'disabled by its owner' });
  await emit(w, { type: 'manual.toggle', payload: { while: 'off' } });
  await new Promise((resolve) => setTimeout(resolve, 700)); // several dispatcher polls
  t.false(
    rx.received.some((r) => r.path === '/hook/toggle'),
    'nothing is sent while disabled',
  );
  const on = await w.owner.api.patch(path(sub.id), { enabled: true });
  t.like(on.body, { enabled: true, disabled_at: null, disabled_reason: null, consecutive_failures: 0 });
  await emit(w, { type: 'manual.toggle', payload: { while: 'on' } });
  const sent = await until(async () => rx.received.find((r) => r.path === '/hook/toggle'), 'a delivery once enabled again');
  t.is(JSON.parse(sent.body).data.while, 'on');
});

test.serial(
  'bad edits are refused and change nothing: empty body, the secret, a bad URL, a refused address, a filter outside the org; others get 404',
  async (t) => {
    const sub = await subscribe(w, { url: `${rx.url}/kept`, events: ['manual.kept'] });
    const cases: [Record<string, unknown>, number, RegExp][] = [
      [{}, 400, /say what to change/],
      [{ secret: 'x'.repeat(20) }, 400, /rotate-secret/],
      [{ url: 'ftp://example.com/x' }, 400, /"url"/],
      [{ url: 'http://169.254.169.254/latest' }, 422, /url refused/],
      [{ filter: { project_id: w.projectB } }, 422, /not a project of org/],
      [{ events: [] }, 400, /"events"/],
    ];
    for (const [body, status, message] of cases) {
      const res = await w.owner.api.patch(path(sub.id), body);
      t.is(res.statusCode, status, JSON.stringify(body));
      t.regex(res.body.message, message);
    }
    t.like((await w.owner.api.get(path(sub.id))).body, { url: `${rx.url}/kept`, events: ['manual.kept'], filter: {} });
    t.is((await w.outsider.api.patch(path(sub.id), { enabled: false })).statusCode, 404);
    t.is((await w.outsider.api.post(`${path(sub.id)}/rotate-secret`, { secret: 'y'.repeat(20) })).statusCode, 404);
    t.is((await w.owner.api.post(`${path(sub.id)}/rotate-secret`, { secret: 'short' })).statusCode, 400);
  },
);
