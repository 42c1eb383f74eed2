import test from 'ava';
import { createHmac } from 'node:crypto';
import { subscriptionMatches, typeMatches } from '../../plugins/webhooks/matching.ts';
import { deliveryHeaders, envelope, standardWebhooksKey } from '../../plugins/webhooks/envelope.ts';

test('patterns: exact, prefix, suffix, everything; job.* names also match their system.job.* forms', (t) => {
  const yes: [string[], string][] = [
    [['*'], 'anything.at.all'],
    [['system.job.*'], 'system.job.failed'],
    [['system.job.*'], 'system.job.attempt.completed'],
    [['job.failed'], 'system.job.failed'],
    [['job.completed'], 'system.job.completed'],
    [['job.*'], 'system.job.attempt.completed'],
    [['*.failed'], 'system.pipeline.failed'],
    [['manual.deploy'], 'manual.deploy'],
    [['a', 'vcshost.*'], 'vcshost.push'],
  ];
  const no: [string[], string][] = [
    [['system.job.*'], 'system.pipeline.failed'],
    [['job.failed'], 'job.failed.extra'],
    [['job.failed'], 'manual.job.failed'],
    [['manual.deploy'], 'manual.deployed'],
    [['vcshost.push'], 'system.vcshost.pushed'],
  ];
  for (const [patterns, type] of yes) t.true(typeMatches(patterns, type), `${patterns} ~ ${type}`);
  for (const [patterns, type] of no) t.false(typeMatches(patterns, type), `${patterns} !~ ${type}`);
});

test('filters: project scope, filter.project_id, agent pattern over agent, agent_slug or assignee', (t) => {
  const event = (project_id: string, payload: Record<string, unknown> = {}) => ({ project_id, type: 'system.job.failed', payload });
  const sub = (extra: Partial<Parameters<typeof subscriptionMatches>[0]>) => ({ project_id: null, events: ['*'], filter: {}, ...extra });
  t.true(subscriptionMatches(sub({}), event('p1')));
  t.false(subscriptionMatches(sub({ project_id: 'p2' }), event('p1')));
  t.false(subscriptionMatches(sub({ filter: { project_id: 'p2' } }), event('p1')));
  t.true(subscriptionMatches(sub({ filter: { agent: 'coder*' } }), event('p1', { agent: 'coder-2' })));
  t.true(subscriptionMatches(sub({ filter: { agent: '*-bot' } }), event('p1', { agent_slug: 'review-bot' })));
  t.true(subscriptionMatches(sub({ filter: { agent: 'alice' } }), event('p1', { assignee: 'alice' })));
  t.false(subscriptionMatches(sub({ filter: { agent: 'coder*' } }), event('p1', { agent: 'reviewer' })));
  t.false(subscriptionMatches(sub({ filter: { agent: '*' } }), event('p1')), 'an event without an agent never matches an agent filter');
});

test('the envelope and headers: both schemes sign the exact bytes sent', (t) => {
  const body = envelope({ id: 'evt_1', type: 'manual.x', org_id: 'org_1', project_id: 'proj_1', time: new Date('2030-01-02T03:04:05.678Z'), data: { a: 1 } });
  t.is(
    body,
    '{"specversion":"1.0","type":"manual.x","source":"svc://orgs/org_1/projects/proj_1","id":"evt_1","time":"2030-01-02T03:04:05.678Z","datacontenttype":"application/json","data":{"a":1}}',
  );
  const secret = 'abcdefghijklmnop';
  const headers = deliveryHeaders({ deliveryId: 'whd_1', messageId: 'evt_1', body, secret, sentAt: new Date(1_900_000_000_000) });
  t.is(headers['x-svc-signature-256'], `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`);
  t.is(headers['webhook-timestamp'], '1900000000');
  t.is(headers['webhook-signature'], `v1,${createHmac('sha256', Buffer.from(secret)).update(`evt_1.1900000000.${body}`).digest('base64')}`);
  t.deepEqual(standardWebhooksKey(`whsec_${Buffer.from('key bytes').toString('base64')}`), Buffer.from('key bytes'));
  t.deepEqual(standardWebhooksKey('whsec_not base64!'), Buffer.from('whsec_not base64!'), 'not base64 after the prefix: the text is the key');
});
