import test from 'ava';
import { newUser } from '../orgs/helpers.ts';
import { as } from '../support/server.ts';
import { managed, target, teardown, world, type World } from './helpers.ts';

/** GET /models with no org named: the managed entries of every org the caller's token can see, and the system's. */
let w: World;
let second: string;
let hidden: string;

const managedIds = async (api: ReturnType<typeof as>, query = '') => {
  const res = await api.get(`/models?source=managed&limit=100${query}`);
  if (res.statusCode !== 200) throw new Error(`models: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body.data.map((m: any) => [m.id, m.org_id]);
};

test.before(async () => {
  w = await world();
  const sys = await target(w, { name: 'sys-ai', kind: 'openai', base_url: `${w.fake.url}/v1`, credential_secret: 'FAKE_KEY' });
  second = (await w.admin.post('/orgs', { name: 'Second Inference Org' })).body.id;
  hidden = (await w.admin.post('/orgs', { name: 'Hidden Inference Org' })).body.id;
  await managed(w, { name: 'fast', target_id: sys.id, upstream_model: 'gpt-fake-1' });
  for (const [org, names] of [
    [w.org, ['smart', 'first-only']],
    [second, ['smart']],
    [hidden, ['secret-model']],
  ] as const) {
    const own = await target(w, { org_id: org, name: 'own', kind: 'openai', base_url: `${w.fake.url}/v1`, credential_secret: null });
    for (const name of names) await managed(w, { org_id: org, name, target_id: own.id, upstream_model: `${name}-up` });
  }
  const added = await w.admin.post(`/orgs/${second}/members`, { email: w.member.email, role: 'member' });
  if (added.statusCode !== 201) throw new Error(`member: ${JSON.stringify(added.body)}`);
});
test.after.always(async () => {
  await teardown(w);
});

test.serial("no org named: the system's entries and those of each org the caller is in, by name, each with its org", async (t) => {
  t.deepEqual(await managedIds(w.member.api), [
    ['managed/fast', null],
    ['managed/first-only', w.org],
    ['managed/smart', w.org < second ? w.org : second],
    ['managed/smart', w.org < second ? second : w.org],
  ]);
  const all = await w.member.api.get('/models?limit=100');
  t.like(
    all.body.data.find((m: any) => m.id === 'managed/first-only'),
    { source: 'managed', org_id: w.org, upstream_model: 'first-only-up', target: 'own' },
  );
  t.like(
    all.body.data.find((m: any) => m.id === 'gpt-fake-1'),
    { source: 'provider', org_id: null },
  );
  t.false(JSON.stringify(all.body).includes('secret-model'), 'an org the caller is not in stays invisible');
});

test.serial('an org named, or the token scoped to one, narrows to it; a user in no org sees the system entries only', async (t) => {
  t.deepEqual(await managedIds(w.member.api, `&org_id=${second}`), [
    ['managed/fast', null],
    ['managed/smart', second],
  ]);
  t.is((await w.member.api.get(`/models?org_id=${hidden}`)).statusCode, 404);

  const sa = await w.orgAdmin.api.post(`/orgs/${w.org}/service-accounts`, { name: 'models-bot', role: 'member' });
  const minted = await w.orgAdmin.api.post(`/orgs/${w.org}/service-accounts/${sa.body.id}/tokens`, { permissions: ['inference:use'] });
  t.is(minted.statusCode, 201, JSON.stringify(minted.body));
  t.deepEqual(await managedIds(as(w.ctx.srv.server, minted.body.token)), [
    ['managed/fast', null],
    ['managed/first-only', w.org],
    ['managed/smart', w.org],
  ]);

  const loner = await newUser(w.ctx, 'models-loner');
  t.deepEqual(await managedIds(loner.api), [['managed/fast', null]]);
});
