import test from 'ava';
import { matchesPattern, patternProblem } from '../../core/events/patterns.ts';
import { decide, decideAll, pushedBranch, type RoutableEvent, type TriggerOwner } from '../../plugins/events/matcher.ts';
import type { Manifest } from '../../domain/manifest/types.ts';

const event = (type: string, payload: Record<string, unknown> = {}, more: Partial<RoutableEvent> = {}): RoutableEvent => ({
  type,
  source: 'manual',
  ref_branch: null,
  payload,
  ...more,
});
const pipeline = (trigger: unknown, name = 'p'): TriggerOwner => ({ kind: 'pipeline', name, trigger });
const workflow = (trigger: unknown, name = 'w'): TriggerOwner => ({ kind: 'workflow', name, trigger });
const fires = (owner: TriggerOwner, e: RoutableEvent) => decide(owner, e).matched;
const why = (owner: TriggerOwner, e: RoutableEvent) => {
  const d = decide(owner, e);
  return d.matched ? `matched ${d.trigger}` : d.reason;
};

test('patterns: exact, prefix, suffix, anything; other wildcards are refused', (t) => {
  t.true(matchesPattern('main', 'main'));
  t.false(matchesPattern('main', 'main2'));
  t.true(matchesPattern('release/*', 'release/1.2'));
  t.true(matchesPattern('release/*', 'release/a/b'));
  t.false(matchesPattern('release/*', 'releases/1'));
  t.true(matchesPattern('*-prod', 'eu-prod'));
  t.false(matchesPattern('*-prod', 'eu-prod-2'));
  t.true(matchesPattern('*', 'anything'));
  t.true(matchesPattern('job.*', 'job.failed'));
  t.is(patternProblem('release/*'), null);
  t.is(patternProblem('*-prod'), null);
  t.is(patternProblem('*'), null);
  t.regex(patternProblem('a*b')!, /only open .* or close/);
  t.regex(patternProblem('*a*')!, /only open/);
  t.regex(patternProblem('')!, /empty/);
});

test('vcshost push: vcshost.event or event, branch wildcards, branch from ref_branch or payload.ref', (t) => {
  for (const trigger of [{ vcshost: { event: 'push', branch: 'main' } }, { event: 'push', branch: 'main' }, { vcshost: { event: 'push' }, branch: 'main' }]) {
    t.true(fires(pipeline(trigger), event('vcshost.push', { ref: 'refs/heads/main' })), JSON.stringify(trigger));
    t.true(fires(pipeline(trigger), event('vcshost.push', {}, { ref_branch: 'main' })));
    t.false(fires(pipeline(trigger), event('vcshost.push', { ref: 'refs/heads/dev' })));
  }
  const prefix = pipeline({ event: 'push', branch: 'release/*' });
  t.true(fires(prefix, event('vcshost.push', { ref: 'refs/heads/release/2.0' })));
  t.is(why(prefix, event('vcshost.push', { ref: 'refs/heads/main' })), "branch 'main' does not match 'release/*'");
  const suffix = pipeline({ event: 'push', branch: ['*-prod', 'main'] });
  t.true(fires(suffix, event('vcshost.push', { ref: 'refs/heads/eu-prod' })));
  t.true(fires(suffix, event('vcshost.push', { ref: 'refs/heads/main' })));
  t.false(fires(suffix, event('vcshost.push', { ref: 'refs/heads/eu-prod-old' })));
  t.true(fires(pipeline({ event: 'push' }), event('vcshost.push', { ref: 'refs/tags/v1' })), 'no branch pattern: any push');
  t.is(why(prefix, event('vcshost.push', { ref: 'refs/tags/v1' })), 'the event names no branch');
  t.is(why(prefix, event('vcshost.pull_request')), 'event type is vcshost.pull_request, not vcshost.push');
  t.is(pushedBranch(event('vcshost.push', { ref: 'refs/heads/x' }, { ref_branch: 'y' })), 'y', 'ref_branch wins');
});

test('vcshost pull request: action list and base_branch wildcards', (t) => {
  const owner = workflow({ event: 'pull_request', action: ['opened', 'synchronize'], base_branch: 'release/*' });
  const pr = (action: string, base: string) =>
    event('vcshost.pull_request', { action, number: 7, pull_request: { base: { ref: base }, head: { ref: 'feature' } } });
  t.true(fires(owner, pr('opened', 'release/1')));
  t.true(fires(owner, pr('synchronize', 'release/2')));
  t.is(why(owner, pr('closed', 'release/1')), "action 'closed' is not one of opened, synchronize");
  t.is(why(owner, pr('opened', 'main')), "base branch 'main' does not match 'release/*'");
  t.true(fires(workflow({ vcshost: { event: 'pull_request', action: 'reopened' } }), pr('reopened', 'main')));
  t.true(fires(workflow({ event: 'pull_request' }), pr('closed', 'anything')), 'no action or base: every pull request event');
  t.true(fires(workflow({ event: 'pull_request', base_branch: 'main' }), event('vcshost.pull_request', { action: 'opened', base_branch: 'main' })));
});

test('cron: the tick of exactly this trigger and schedule', (t) => {
  const owner = pipeline({ cron: { schedule: '0 3 * * *' } }, 'nightly');
  const tick = (payload: Record<string, unknown>) => event('cron.tick', payload, { source: 'cron' });
  t.true(fires(owner, tick({ schedule: '0 3 * * *', trigger_name: 'nightly', trigger_kind: 'pipeline' })));
  t.true(fires(owner, tick({ schedule: '0 3 * * *', trigger_name: 'nightly' })));
  t.is(why(owner, tick({ schedule: '0 3 * * *', trigger_name: 'nightly', trigger_kind: 'workflow' })), 'the tick is for workflow nightly');
  t.is(why(owner, tick({ schedule: '0 3 * * *', trigger_name: 'other', trigger_kind: 'pipeline' })), 'the tick is for pipeline other');
  t.regex(why(owner, tick({ schedule: '* * * * *', trigger_name: 'nightly' })), /schedule '\* \* \* \* \*', the trigger's is '0 3/);
  t.true(fires(pipeline({ cron: '0 3 * * *' }, 'nightly'), tick({ schedule: '0 3 * * *', trigger_name: 'nightly' })), 'string shorthand');
});

test('system: system.event with the system. prefix implied, wildcards, pipeline scope, source system only', (t) => {
  const failed = (payload: Record<string, unknown> = {}) => event('system.job.failed', payload, { source: 'system' });
  t.true(fires(workflow({ system: { event: 'job.failed' } }, 'on-fail'), failed()));
  t.true(fires(workflow({ system: { event: 'system.job.failed' } }, 'on-fail'), failed()));
  t.true(fires(workflow({ system: { event: 'job.*' } }, 'on-fail'), failed()));
  t.is(why(workflow({ system: { event: 'pipeline.failed' } }), failed()), 'event type system.job.failed does not match system.pipeline.failed');
  t.is(why(workflow({ system: { event: 'job.failed' } }), event('system.job.failed')), 'system triggers take events from source system, not manual');
  const scoped = workflow({ system: { event: 'pipeline.failed', pipeline: 'deploy-*' } }, 'page');
  const pipelineFailed = (name: string) => event('system.pipeline.failed', { run_id: 'prun_x', pipeline_name: name }, { source: 'system' });
  t.true(fires(scoped, pipelineFailed('deploy-eu')));
  t.is(why(scoped, pipelineFailed('build')), "pipeline 'build' does not match 'deploy-*'");
  t.true(
    fires(workflow({ system: { event: 'job.failed', pipeline: 'ship' } }), failed({ metadata: { pipeline_name: 'ship' } })),
    'job events carry the pipeline in metadata',
  );
  t.is(why(workflow({ system: { event: 'job.failed', pipeline: 'ship' } }), failed()), 'the event names no pipeline');
});

test('anti-recursion: a system event never triggers the pipeline or workflow it came from', (t) => {
  const self = pipeline({ system: { event: 'pipeline.failed' } }, 'deploy');
  const fromDeploy = event('system.pipeline.failed', { pipeline_name: 'deploy', run_id: 'prun_1' }, { source: 'system' });
  t.is(why(self, fromDeploy), 'anti-recursion: the event came from pipeline deploy itself');
  t.true(fires(pipeline({ system: { event: 'pipeline.failed' } }, 'rollback'), fromDeploy));
  const wf = workflow({ system: { event: 'job.failed' } }, 'fixer');
  t.is(
    why(wf, event('system.job.failed', { metadata: { workflow_name: 'fixer' } }, { source: 'system' })),
    'anti-recursion: the event came from workflow fixer itself',
  );
  t.true(fires(wf, event('system.job.failed', { metadata: { workflow_name: 'other' } }, { source: 'system' })));
  t.is(
    why(pipeline({ event: { type: 'system.*' } }, 'deploy'), fromDeploy),
    'anti-recursion: the event came from pipeline deploy itself',
    'whatever the clause',
  );
});

test('chatapp: event and channel (with or without #)', (t) => {
  const owner = workflow({ chatapp: { event: 'message', channel: '#deploys' } });
  t.true(fires(owner, event('chatapp.message', { channel: 'deploys', text: 'ship it' })));
  t.true(fires(owner, event('chatapp.message', { channel: '#deploys' })));
  t.is(why(owner, event('chatapp.message', { channel: 'random' })), "channel 'random' does not match 'deploys'");
  t.is(why(owner, event('chatapp.app_mention', { channel: 'deploys' })), 'event type is chatapp.app_mention, not chatapp.message');
  t.true(fires(workflow({ event: 'app_mention', channel: 'ops-*' }), event('chatapp.app_mention', { channel: 'ops-eu' })), 'flat form');
  t.true(fires(workflow({ event: 'message' }), event('chatapp.message', { channel: 'any' })));
});

test('custom: event.type pattern and event.source', (t) => {
  t.true(fires(workflow({ event: { type: 'app.deployed' } }), event('app.deployed', {}, { source: 'app' })));
  t.true(fires(workflow({ event: { type: 'manual.*', source: 'manual' } }), event('manual.release')));
  t.is(why(workflow({ event: { type: 'manual.*', source: 'app' } }), event('manual.release')), 'event source manual is not app');
  t.is(why(workflow({ event: { type: 'app.deployed' } }), event('app.other')), "event type app.other does not match 'app.deployed'");
  t.true(fires(workflow({ event: { source: 'chat' } }), event('chat.anything', {}, { source: 'chat' })));
});

test('manual: never fired by an event; several kinds in one trigger: any of them fires', (t) => {
  t.is(why(pipeline({ manual: true }), event('manual.run')), 'manual: runs only when started explicitly');
  const both = pipeline({ manual: true, event: 'push', branch: 'main' });
  t.true(fires(both, event('vcshost.push', { ref: 'refs/heads/main' })));
  t.is(
    why(both, event('vcshost.push', { ref: 'refs/heads/dev' })),
    "vcshost.push: branch 'dev' does not match 'main'; manual: manual: runs only when started explicitly",
  );
  t.regex(why(pipeline({ bogus: 1 }), event('x')), /^invalid trigger: pipelines\.p\.trigger\.bogus: Unknown trigger kind 'bogus'/);
  t.is(why(pipeline({ manual: false }), event('x')), 'the trigger defines no event');
});

test('decideAll: every pipeline and workflow with a trigger, pipelines first', (t) => {
  const manifest = {
    pipelines: { a: { trigger: { event: 'push' }, steps: [] }, b: { steps: [] } },
    workflows: { c: { trigger: { manual: true }, steps: [] } },
  } as unknown as Manifest;
  const decisions = decideAll(manifest, event('vcshost.push', { ref: 'refs/heads/main' }));
  t.deepEqual(decisions, [
    { kind: 'pipeline', name: 'a', matched: true, trigger: 'vcshost.push' },
    { kind: 'workflow', name: 'c', matched: false, reason: 'manual: runs only when started explicitly' },
  ]);
});
