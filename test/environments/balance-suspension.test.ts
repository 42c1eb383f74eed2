/**
 * The billing → environments seam wired for real (both plugins, no fake at the seam): an org's
 * balance falling below its threshold suspends its environments, whose services the deployer stops;
 * deploys are then refused with the reason, and a resume restores them.
 */
import test from 'ava';
import { as } from '../support/server.ts';
import { envWorld, example, settled, sha, type EnvWorld } from './helpers.ts';

let w: EnvWorld;
let admin: ReturnType<typeof as>;
let orgId = '';
const base = () => `/projects/${w.projectA}/environments`;

test.before(async () => {
  w = await envWorld('envbalance', example('staging.yaml'));
  admin = as(w.ctx.srv.server, w.ctx.adminToken);
  orgId = (await w.owner.api.get(`/projects/${w.projectA}`)).body.org_id;
  w.releases.add(w.projectA, { id: 'rel_v1', tag: 'v1', git_sha: sha('a'), manifest_hash: null, image_digests: { web: 'sha256:' + 'a'.repeat(64) } });
});
test.after.always(() => w?.ctx.srv.stop());

test.serial('a balance falling below its threshold suspends the org’s environments through the real seam; the deployer stops them', async (t) => {
  const deployed = await w.owner.api.post(`${base()}/staging/deploy`, { release_tag: 'v1' });
  t.is(deployed.statusCode, 202, JSON.stringify(deployed.body));
  t.like(await settled(w, 'staging', deployed.body.id), { status: 'succeeded' });

  t.like((await admin.post(`/admin/orgs/${orgId}/credits`, { amount: 10 })).body, { balance: 10 });
  t.like((await admin.patch(`/admin/orgs/${orgId}/billing`, { balance_threshold: 5 })).body, { below_threshold_since: null });
  t.like((await w.owner.api.get(`${base()}/staging`)).body, { suspended: false });

  const corrected = await admin.post(`/admin/orgs/${orgId}/credits`, { amount: -7 });
  t.is(corrected.statusCode, 200, JSON.stringify(corrected.body));
  t.like(corrected.body, { balance: 3 });
  const reason = 'balance 3 USD fell below the threshold 5 USD';
  t.like((await w.owner.api.get(`${base()}/staging`)).body, { suspended: true, suspended_reason: reason });

  const [event] = await w.db('events').where({ project_id: w.projectA, type: 'system.org.balance_low' });
  t.like(typeof event.payload_json === 'string' ? JSON.parse(event.payload_json) : event.payload_json, { environments_suspended: 1 });
  // The services are stopped once the transaction has committed.
  for (const end = Date.now() + 10_000; !w.deployer.calls.includes('suspend staging') && Date.now() < end;) await new Promise((r) => setTimeout(r, 25));
  t.true(w.deployer.calls.includes('suspend staging'), w.deployer.calls.join(', '));

  const refused = await w.owner.api.post(`${base()}/staging/deploy`, { release_tag: 'v1' });
  t.is(refused.statusCode, 409);
  t.is(refused.body.message, `environment staging is suspended: ${reason}`);

  t.like((await w.owner.api.post(`${base()}/staging/resume`, {})).body, { suspended: false });
  t.is((await w.owner.api.post(`${base()}/staging/deploy`, { release_tag: 'v1' })).statusCode, 202);
});
