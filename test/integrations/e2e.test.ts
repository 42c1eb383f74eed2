/** From a signed provider delivery to the work its trigger starts, through the event router. */
import test from 'ava';
import type { World } from '../jobs/claim-helpers.ts';
import { jobRow } from '../jobs/claim-helpers.ts';
import { eventWorld, routed, syncManifest } from '../events/helpers.ts';
import { AFTER, pullRequest, push } from '../fixtures/vcshost/deliveries.ts';
import { bindTeam, chatHeaders, deliver, hubSignature } from './helpers.ts';

const MANIFEST = `
pipelines:
  ship:
    trigger: { vcshost: { event: push, branch: 'release/*' } }
    steps:
      - { name: build, run: make build }
workflows:
  review:
    trigger: { event: pull_request, action: [opened, synchronize], base_branch: main }
    steps:
      - { name: look, agent: { name: reviewer } }
  answer:
    trigger: { chatapp: { event: app_mention, channel: C0DEPLOYS } }
    steps:
      - { name: reply, run: echo hi }
`;

let w: World;
test.before(async () => {
  w = await eventWorld('intge2e', true);
  await syncManifest(w, MANIFEST);
  for (const [base, name, value] of [
    [`/projects/${w.projectA}`, 'VCSHOST_WEBHOOK_SECRET', 'e2e-hook-secret'],
    ['/system', 'CHATAPP_SIGNING_SECRET', 'e2e-signing-secret'],
  ]) {
    const res = await (base === '/system'
      ? w.ctx.srv.server
          .inject({ method: 'POST', url: '/system/secrets', payload: { name, value }, headers: { authorization: `Bearer ${w.ctx.adminToken}` } })
          .then((r) => ({ statusCode: r.statusCode }))
      : w.owner.api.post(`${base}/secrets`, { name, value }));
    if (res.statusCode !== 201) throw new Error(`secret ${name}: ${res.statusCode}`);
  }
});
test.after.always(() => w?.ctx.srv.stop());

const hook = (event: string, body: object, delivery: string) => {
  const raw = JSON.stringify(body);
  return deliver(w.ctx.srv.server, `/integrations/vcshost/events/${w.projectA}`, raw, {
    'x-github-event': event,
    'x-github-delivery': delivery,
    'x-hub-signature-256': hubSignature('e2e-hook-secret', raw),
  });
};

test.serial('a push to release/* starts the pipeline at the pushed commit', async (t) => {
  const stored = await hook('push', push('refs/heads/release/3.1'), 'e2e-push-1');
  t.is(stored.statusCode, 201);
  const event = await routed(w, stored.body.id);
  t.is(event.status, 'completed', JSON.stringify(event));
  t.deepEqual(
    event.routing.matched.map((m: any) => `${m.kind} ${m.name}`),
    ['pipeline ship'],
  );
  const run = (await w.owner.api.get(`/projects/${w.projectA}/runs/${event.routing.matched[0].run_id}`)).body;
  t.like(run, { pipeline_name: 'ship', ref: AFTER });
  t.is(run.created_by, 'vcshost:octo', 'the sender, named as the code host knows them');
});

test.serial('a pull request opened against main invokes the review workflow with the payload', async (t) => {
  const stored = await hook('pull_request', pullRequest('opened', 77), 'e2e-pr-1');
  const event = await routed(w, stored.body.id);
  t.deepEqual(
    event.routing.matched.map((m: any) => `${m.kind} ${m.name}`),
    ['workflow review'],
  );
  const root = await jobRow(w, event.routing.matched[0].job_id);
  t.is(JSON.parse(root.hints.request_json).number, 77);
  t.is(JSON.parse(root.hints.request_json).pull_request.base.ref, 'main');
});

test.serial('a mention in a routed channel invokes the chat workflow', async (t) => {
  const orgA = (await w.owner.api.get(`/projects/${w.projectA}`)).body.org_id;
  await bindTeam(w.ctx.srv.server, w.owner.api, orgA, 'T0E2E', 'e2e-signing-secret');
  t.is((await w.owner.api.post(`/projects/${w.projectA}/routes`, { team_id: 'T0E2E', channel: 'C0DEPLOYS' })).statusCode, 201);
  const body = JSON.stringify({
    type: 'event_callback',
    team_id: 'T0E2E',
    event_id: 'Ev0E2E1',
    event: { type: 'app_mention', channel: 'C0DEPLOYS', user: 'U0ALICE1', text: '<@U0BOT> ship it', ts: '1718000000.000100' },
  });
  const stored = await deliver(w.ctx.srv.server, '/gateway/providers/chatapp/webhook', body, chatHeaders('e2e-signing-secret', body));
  t.is(stored.statusCode, 201);
  const event = await routed(w, stored.body.id);
  t.deepEqual(
    event.routing.matched.map((m: any) => `${m.kind} ${m.name}`),
    ['workflow answer'],
  );
});
