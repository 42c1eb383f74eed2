import test from 'ava';
import type { World } from '../jobs/claim-helpers.ts';
import { eventWorld } from './helpers.ts';

/** POST /projects/{id}/schedules/ensure: a schedule is known by its name in the project. */
let w: World;
const base = () => `/projects/${w.projectA}/schedules`;
const nightly = { name: 'nightly', cron: '0 3 * * *', event_type: 'nightly.run', payload: { suite: 'full' } };

test.before(async () => {
  w = await eventWorld('schensure');
});
test.after.always(() => w?.ctx.srv.stop());

test.serial('created when missing (200), the same again answers it, other fields are 409 naming them; nothing else is written', async (t) => {
  const created = await w.owner.api.post(`${base()}/ensure`, nightly);
  t.is(created.statusCode, 200, JSON.stringify(created.body));
  t.like(created.body, { name: 'nightly', cron: '0 3 * * *', event_type: 'nightly.run', payload: { suite: 'full' }, enabled: true });
  const again = await w.owner.api.post(`${base()}/ensure`, nightly);
  t.is(again.statusCode, 200);
  t.is(again.body.id, created.body.id);
  const differs = await w.owner.api.post(`${base()}/ensure`, { ...nightly, cron: '0 4 * * *', payload: { suite: 'smoke' } });
  t.is(differs.statusCode, 409);
  t.is(differs.body.message, `schedule nightly (${created.body.id}) exists with other cron, payload`);
  t.is((await w.owner.api.get(base())).body.pagination.total, 1);
  const other = await w.owner.api.post(`${base()}/ensure`, { ...nightly, name: 'weekly', cron: '0 3 * * 1' });
  t.is(other.statusCode, 200);
  t.not(other.body.id, created.body.id);
});

test.serial('ensure needs a name (400 naming it), a valid cron, and events:write on a visible project', async (t) => {
  const { name: _name, ...unnamed } = nightly;
  const noName = await w.owner.api.post(`${base()}/ensure`, unnamed);
  t.is(noName.statusCode, 400);
  t.regex(noName.body.message, /"name" is required/);
  const badCron = await w.owner.api.post(`${base()}/ensure`, { ...nightly, cron: 'every night' });
  t.is(badCron.statusCode, 400);
  t.regex(badCron.body.message, /"cron"/);
  t.is((await w.outsider.api.post(`${base()}/ensure`, nightly)).statusCode, 404);
});
