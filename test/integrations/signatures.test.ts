/** The adapters' signature checks on their own, where the clock is exact. */
import test from 'ava';
import { createAdapter, type AdapterDeps } from '../../core/adapters.ts';
import { chatHeaders, hubSignature } from './helpers.ts';

const deps = {} as AdapterDeps;
const body = Buffer.from('{"type":"event_callback"}');

test('the chat replay window is 5 minutes either way, to the second', async (t) => {
  const app = await createAdapter('chatapp', { use: 'chat', options: {} }, deps);
  const now = new Date('2024-06-10T10:00:00Z');
  const at = (offset: number) => ({ headers: chatHeaders('s3cret', body.toString(), now.getTime() / 1000 + offset), body });
  for (const offset of [-300, 0, 300]) t.deepEqual(app.verify(at(offset), 's3cret', now), { ok: true }, `offset ${offset}`);
  for (const offset of [-301, 301]) t.false(app.verify(at(offset), 's3cret', now).ok, `offset ${offset}`);
});

test('signature headers are matched without regard to hex case, and a repeated header counts as missing', async (t) => {
  const host = await createAdapter('vcshost', { use: 'hub', options: {} }, deps);
  const upper = hubSignature('s3cret', body.toString())
    .replace(/[a-f]/g, (c) => c.toUpperCase())
    .replace('SHA256', 'sha256');
  t.deepEqual(host.verify({ headers: { 'x-hub-signature-256': upper }, body }, 's3cret'), { ok: true });
  const twice = [hubSignature('s3cret', body.toString()), hubSignature('s3cret', body.toString())];
  t.deepEqual(host.verify({ headers: { 'x-hub-signature-256': twice }, body }, 's3cret'), { ok: false, reason: 'X-Hub-Signature-256 header is missing' });
});

test('the event and delivery headers are the adapter options', async (t) => {
  const host = await createAdapter('vcshost', { use: 'hub', options: { event_header: 'X-Gitea-Event', delivery_header: 'X-Gitea-Delivery' } }, deps);
  const delivery = host.normalize({ headers: { 'x-gitea-event': 'release', 'x-gitea-delivery': 'abc' }, body });
  t.deepEqual(delivery, { kind: 'ignored', event: 'release' });
  t.deepEqual(host.normalize({ headers: { 'x-github-event': 'push' }, body }), { kind: 'invalid', message: 'X-Gitea-Event header is missing' });
});
