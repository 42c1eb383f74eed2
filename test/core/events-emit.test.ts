import test from 'ava';
import { emitEvent } from '../../core/events/emit.ts';
import { claimWorld, type World } from '../jobs/claim-helpers.ts';

let w: World;
test.before(async () => {
  w = await claimWorld('emit');
});
test.after.always(() => w?.ctx.srv.stop());

test('an event is stored pending; a dedupe key already seen in the project returns the first event', async (t) => {
  const base = { project_id: w.projectA, type: 'manual.deploy', source: 'manual' as const, payload: { n: 1 } };
  const first = await emitEvent(w.db, { ...base, dedupe_key: 'd-1' });
  t.true(first.created);
  t.regex(first.id, /^evt_/);
  const again = await emitEvent(w.db, { ...base, payload: { n: 2 }, dedupe_key: 'd-1' });
  t.deepEqual(again, { id: first.id, created: false });
  const other = await emitEvent(w.db, { ...base, project_id: w.projectA2, dedupe_key: 'd-1' });
  t.true(other.created, 'keys are per project');
  const plain = await Promise.all([emitEvent(w.db, base), emitEvent(w.db, base)]);
  t.true(
    plain.every((e) => e.created),
    'no key: every event is new',
  );
  const row = await w.db('events').where({ id: first.id }).first();
  t.like(row, { status: 'pending', source: 'manual', type: 'manual.deploy', dedupe_key: 'd-1' });
  t.deepEqual(row.payload_json, { n: 1 });
});
