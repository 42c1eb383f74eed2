import test from 'ava';
import { readTrigger } from '../../domain/manifest/triggers.ts';
import { Problems } from '../../domain/manifest/problems.ts';
import { validateManifest } from '../../domain/manifest/validate.ts';
import { cronProblem } from '../../core/cron.ts';

const read = (trigger: unknown) => {
  const problems = new Problems();
  const clauses = readTrigger(trigger, 't', problems);
  return { clauses, problems: problems.list };
};

test('readTrigger: every form of the spec table becomes its clause', (t) => {
  t.deepEqual(read({ vcshost: { event: 'push', branch: 'main' } }), { clauses: [{ kind: 'push', branches: ['main'] }], problems: [] });
  t.deepEqual(read({ event: 'push', branch: ['main', 'release/*'] }).clauses, [{ kind: 'push', branches: ['main', 'release/*'] }]);
  t.deepEqual(read({ event: 'pull_request', action: ['opened', 'closed'], base_branch: 'main' }).clauses, [
    { kind: 'pull_request', actions: ['opened', 'closed'], base_branches: ['main'] },
  ]);
  t.deepEqual(read({ cron: { schedule: '0 3 * * *' } }).clauses, [{ kind: 'cron', schedule: '0 3 * * *' }]);
  t.deepEqual(read({ system: { event: 'job.failed', pipeline: 'ship' } }).clauses, [{ kind: 'system', event: 'job.failed', pipelines: ['ship'] }]);
  t.deepEqual(read({ chatapp: { event: 'message', channel: 'deploys' } }).clauses, [{ kind: 'chatapp', event: 'message', channels: ['deploys'] }]);
  t.deepEqual(read({ event: 'app_mention' }).clauses, [{ kind: 'chatapp', event: 'app_mention', channels: null }]);
  t.deepEqual(read({ event: { type: 'app.*', source: 'app' } }).clauses, [{ kind: 'custom', type: 'app.*', source: 'app' }]);
  t.deepEqual(read({ manual: true }).clauses, [{ kind: 'manual' }]);
});

test('readTrigger: every bad shape is a problem with its path', (t) => {
  const cases: [unknown, string, RegExp][] = [
    [{ bogus: true }, 't.bogus', /Unknown trigger kind 'bogus' in t; expected vcshost, event, cron, system, chatapp or manual/],
    [{ vcshost: { event: 'fork' } }, 't.vcshost.event', /must be one of push, pull_request, got 'fork'/],
    [{ vcshost: 'push' }, 't.vcshost', /must be a mapping/],
    [{ event: 'push', branch: 'a*b' }, 't.branch', /wildcard may only open/],
    [{ event: 'push', branch: [] }, 't.branch', /pattern or a list of patterns/],
    [{ event: 'push', action: 'opened' }, 't.action', /applies to pull_request triggers/],
    [{ event: 'pull_request', action: ['opened', 'merged'] }, 't.action[1]', /one of opened, synchronize, reopened, closed, got 'merged'/],
    [{ event: 'pull_request', branch: 'main' }, 't.branch', /take base_branch, not branch/],
    [{ branch: 'main' }, 't.branch', /belongs to a vcshost trigger/],
    [{ channel: 'x' }, 't.channel', /belongs to a chatapp trigger/],
    [{ event: 'pussh' }, 't.event', /event must be push, pull_request, message, app_mention, or a mapping/],
    [{ event: { kind: 'x' } }, 't.event.kind', /Unknown key 'kind'/],
    [{ event: {} }, 't.event', /needs event.type, event.source or both/],
    [{ event: { source: 'mars' } }, 't.event.source', /must be one of vcshost, chatapp/],
    [{ chatapp: { event: 'reaction' } }, 't.chatapp.event', /one of message, app_mention/],
    [{ cron: { schedule: 'every hour' } }, 't.cron.schedule', /not a standard 5-field cron expression/],
    [{ cron: '61 * * * *' }, 't.cron', /not a valid cron expression/],
    [{ cron: {} }, 't.cron.schedule', /must be a cron expression/],
    [{ system: { pipeline: 'x' } }, 't.system.event', /must name a system event/],
    [{ manual: 'yes' }, 't.manual', /manual must be true or false/],
    ['push', 't', /must be a mapping, got a string/],
  ];
  for (const [trigger, path, message] of cases) {
    const { problems } = read(trigger);
    t.true(
      problems.some((p) => p.path === path && message.test(p.message)),
      `${JSON.stringify(trigger)} → ${JSON.stringify(problems)}`,
    );
  }
});

test('manifest validation reports trigger problems at their path; valid triggers pass', (t) => {
  const problems = validateManifest({
    pipelines: { ship: { trigger: { vcshost: { event: 'push', branch: 'main' }, cron: { schedule: '0 3 * * *' } }, steps: [{ name: 'a', run: 'x' }] } },
    workflows: { fix: { trigger: { system: { event: 'job.failed' }, nonsense: 1 }, steps: [{ name: 'a', run: 'x' }] } },
  });
  t.deepEqual(
    problems.map((p) => p.path),
    ['workflows.fix.trigger.nonsense'],
  );
});

test('cronProblem: standard five fields only, UTC', (t) => {
  for (const ok of ['* * * * *', '0 3 * * 1-5', '*/15 0-6 1,15 * *', '0 0 * JAN MON']) t.is(cronProblem(ok), null, ok);
  for (const bad of ['* * * *', '0 0 * * * *', '1 hour * * *', '99 * * * *', '@daily']) t.truthy(cronProblem(bad), bad);
});
