import test from 'ava';
import { ProfileError, chooseAgent, planAgent, resolveAgent, type ProfileLookups } from '../../domain/manifest/profiles.ts';
import type { AgentsConfig } from '../../domain/manifest/types.ts';
import type { HarnessAuthStatus } from '../../core/ports/harness.ts';

const IDS = ['harness_a', 'harness_b', 'harness_c', 'harness_d', 'harness_e', 'harness_f'];
const lookups: ProfileLookups = {
  canonical: (n) => (n === 'coder' ? 'harness_e' : IDS.includes(n) ? n : undefined),
  variants: (id) => (id === 'harness_c' ? ['gateway', 'bedrock', 'vertex'] : undefined),
  defaultHarness: 'harness_b',
};
const agents = (profiles: AgentsConfig['profiles'], drop?: boolean): AgentsConfig => ({
  version: 1,
  profiles,
  ...(drop === undefined ? {} : { availability: { drop_unavailable: drop } }),
});
const status = (available: boolean): HarnessAuthStatus => ({ available, reason: available ? 'ok' : 'binary not found', instructions: [] });

const PROFILES: AgentsConfig['profiles'] = {
  fast: [{ harness: 'harness_d', model: 'gpt-5-mini', reasoning_effort: 'low' }, { harness: 'coder' }],
  smart: [{ harness: 'harness_b', model: 'opus', reasoning_effort: 'high' }, { profile: 'fast' }],
  default: [{ harness: 'harness_f', model: 'anthropic/claude-sonnet-4-5' }],
};

test('a named profile expands in order, references in place, aliases to ids', (t) => {
  const choice = resolveAgent({ harness_profile: 'smart' }, agents(PROFILES), lookups);
  t.like(choice, { harness: 'harness_b', model: 'opus', reasoningEffort: 'high', source: 'profile', profile: 'smart' });
  t.deepEqual(choice.fallbacks, [{ harness: 'harness_d', model: 'gpt-5-mini', reasoningEffort: 'low' }, { harness: 'harness_e' }]);
});

test('an explicit harness wins over the profile; nothing named uses the default profile, else the server default', (t) => {
  t.like(resolveAgent({ harness: 'coder', harness_profile: 'smart' }, agents(PROFILES), lookups), { harness: 'harness_e', source: 'harness', fallbacks: [] });
  t.like(resolveAgent({}, agents(PROFILES), lookups), { harness: 'harness_f', source: 'default_profile', profile: 'default' });
  t.like(resolveAgent({}, undefined, lookups), { harness: 'harness_b', source: 'server_default', profile: null });
});

test('job fields override every entry: harness_options over model / reasoning_effort / harness_variant', (t) => {
  const choice = resolveAgent(
    { harness_profile: 'fast', model: 'gpt-5', reasoning_effort: 'medium', harness_options: { reasoning_effort: 'x-high' } },
    agents(PROFILES),
    lookups,
  );
  t.like(choice, { harness: 'harness_d', model: 'gpt-5', reasoningEffort: 'x-high' });
  t.deepEqual(choice.fallbacks, [{ harness: 'harness_e', model: 'gpt-5', reasoningEffort: 'x-high' }]);
  t.like(resolveAgent({ harness: 'harness_c', harness_variant: 'vertex', harness_options: { variant: 'bedrock' } }, undefined, lookups), {
    variant: 'bedrock',
  });
  t.like(resolveAgent({ harness: 'harness_c', harness_variant: 'vertex' }, undefined, lookups), { variant: 'vertex' });
});

test('harness_profile_override replaces the profile: an inline list or one entry, and may set drop_unavailable', (t) => {
  const inline = resolveAgent(
    { harness_profile: 'smart', harness_profile_override: { entries: [{ harness: 'harness_a' }, { profile: 'fast' }] } },
    agents(PROFILES),
    lookups,
  );
  t.like(inline, { harness: 'harness_a', source: 'override' });
  t.is(inline.fallbacks.length, 2);
  t.like(resolveAgent({ harness: 'harness_b', harness_profile_override: { harness: 'harness_d', model: 'o3' } }, undefined, lookups), {
    harness: 'harness_d',
    model: 'o3',
    source: 'override',
  });
  const plan = planAgent({ harness_profile_override: { entries: [{ harness: 'harness_a' }], drop_unavailable: true } }, agents(PROFILES, false), lookups);
  t.true(plan.dropUnavailable);
});

test('drop_unavailable drops entries whose harness is not available, and says why', (t) => {
  const available = (id: string) => status(id !== 'harness_b' && id !== 'harness_d');
  const choice = resolveAgent({ harness_profile: 'smart' }, agents(PROFILES, true), lookups, available);
  t.like(choice, { harness: 'harness_e' });
  t.deepEqual(choice.dropped, [
    { harness: 'harness_b', reason: 'binary not found' },
    { harness: 'harness_d', reason: 'binary not found' },
  ]);
  t.like(resolveAgent({ harness_profile: 'smart' }, agents(PROFILES, false), lookups, available), { harness: 'harness_b', dropped: [] });
  const none = t.throws(() => resolveAgent({ harness_profile: 'fast' }, agents(PROFILES, true), lookups, () => status(false)), { instanceOf: ProfileError });
  t.is(none.message, "no available harness in profile 'fast': harness_d (binary not found); harness_e (binary not found)");
});

test('chooseAgent keeps an entry whose availability is unknown', (t) => {
  const plan = planAgent({ harness_profile: 'fast' }, agents(PROFILES, true), lookups);
  t.like(
    chooseAgent(plan, () => undefined),
    { harness: 'harness_d' },
  );
});

const BAD: [string, Parameters<typeof resolveAgent>[0], AgentsConfig | undefined, RegExp][] = [
  [
    'a cycle',
    { harness_profile: 'a' },
    agents({ a: [{ profile: 'b' }], b: [{ harness: 'harness_b' }, { profile: 'c' }], c: [{ profile: 'a' }] }),
    /^Profile cycle detected in x-svc\.agents: a -> b -> c -> a$/,
  ],
  ['a self reference', { harness_profile: 'a' }, agents({ a: [{ profile: 'a' }] }), /a -> a/],
  ['an unknown profile', { harness_profile: 'nope' }, agents(PROFILES), /^Unknown harness profile 'nope'/],
  ['an unknown reference', { harness_profile: 'a' }, agents({ a: [{ profile: 'ghost' }] }), /Unknown harness profile 'ghost'/],
  ['an unknown harness', { harness: 'harness_z' }, undefined, /^unknown harness 'harness_z'$/],
  ['the harness:variant syntax', { harness: 'harness_c:bedrock' }, undefined, /harness:variant syntax is not parsed; use harness_options\.variant/],
  [
    'an unknown variant',
    { harness: 'harness_c', harness_options: { variant: 'azure' } },
    undefined,
    /harness_c has no variant 'azure' \(known: gateway, bedrock, vertex\)/,
  ],
  ['a bad reasoning effort', { harness: 'harness_b', reasoning_effort: 'max' }, undefined, /reasoning_effort must be one of low, medium, high, x-high/],
  [
    'an entry with both harness and profile',
    { harness_profile: 'a' },
    agents({ a: [{ harness: 'harness_b', profile: 'b' } as never], b: [] }),
    /either harness or profile/,
  ],
  ['an empty profile', { harness_profile: 'a' }, agents({ a: [] }), /profile 'a' has no entries/],
  ['an override that is not an object', { harness_profile_override: [] as never }, undefined, /must be an object/],
  ['an override with empty entries', { harness_profile_override: { entries: [] } }, undefined, /non-empty list/],
  ['an override entry without harness', { harness_profile_override: { model: 'x' } }, undefined, /needs harness or profile/],
];
for (const [what, request, config, message] of BAD) {
  test(`rejects ${what}`, (t) => {
    const err = t.throws(() => resolveAgent(request, config, lookups), { instanceOf: ProfileError });
    t.regex(err.message, message);
  });
}
