import test from 'ava';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { harnessContract, type HarnessContractFixtures, type HarnessDefinition } from '../../core/sdk.ts';
import { builtInHarnesses } from '../../harnesses/index.ts';
import * as samples from './samples.ts';

const claude: HarnessContractFixtures = { stream: samples.claudeStream, usage: { inputTokens: 30, outputTokens: 700 }, failure: samples.claudeFailure };
const FIXTURES: Record<string, HarnessContractFixtures> = {
  harness_a: claude,
  harness_b: claude,
  harness_c: claude,
  harness_d: { stream: samples.codexStream, usage: { inputTokens: 315, outputTokens: 122 }, failure: samples.codexFailure },
  harness_e: { stream: samples.geminiStream, usage: { inputTokens: 500, outputTokens: 290 }, failure: samples.geminiFailure },
  harness_f: { stream: samples.opencodeStream, usage: { inputTokens: 500, outputTokens: 300 }, failure: samples.opencodeFailure },
};

const builtIns = builtInHarnesses({ harness_a: { mcp_servers: { docs: { command: 'docs-mcp', args: ['--stdio'] } } } });
for (const def of builtIns) {
  for (const check of harnessContract(def, FIXTURES[def.id])) {
    test(check.name, async (t) => {
      await check.run();
      t.pass();
    });
  }
}

// The example third-party package, loaded as svc loads plugins (by path at run time).
const EXAMPLE = fileURLToPath(new URL('../../examples/harness-plugin/index.ts', import.meta.url));
const acmeLine = (o: unknown) => JSON.stringify(o);
const acmeFixtures: HarnessContractFixtures = {
  stream: [
    acmeLine({ event: 'say', text: 'working' }),
    acmeLine({ event: 'tool', name: 'shell', args: { command: 'ls' } }),
    acmeLine({ event: 'say', text: 'Done.\n\n```json-result\n{"svc": {"status": "success"}}\n```' }),
    acmeLine({ event: 'usage', model: 'acme-large', prompt_tokens: 800, completion_tokens: 120 }),
  ],
  usage: { inputTokens: 800, outputTokens: 120 },
  failure: [acmeLine({ event: 'fail', message: 'quota' })],
};
test('the example plugin package passes the contract kit', async (t) => {
  const acme = ((await import(pathToFileURL(EXAMPLE).href)) as { default: HarnessDefinition }).default;
  const checks = harnessContract(acme, acmeFixtures);
  t.true(checks.length >= 7);
  for (const check of checks) await t.notThrowsAsync(async () => check.run(), check.name);
});

/** The kit must catch what it claims to catch. */
const broken = (over: Partial<HarnessDefinition>): HarnessDefinition => ({ ...builtIns[1], ...over });
const failing: [string, HarnessDefinition, string][] = [
  [
    'a harness that ignores permission policies',
    broken({ build: (i) => ({ command: 'x', args: ['--', i.prompt], env: { ...i.env }, files: {} }) }),
    'never and yolo',
  ],
  ['a parser that throws', broken({ parseLine: (l) => [JSON.parse(l)] }), 'parseLine threw'],
  ['a build that drops the job environment', broken({ build: (i) => ({ ...builtIns[1].build(i), env: {} }) }), 'job environment'],
  ['a prompt passed as one huge argument', broken({ build: (i) => ({ ...builtIns[1].build({ ...i, prompt: 'short' }), args: [i.prompt] }) }), 'exceeds'],
  ['a file path outside the workspace', broken({ build: (i) => ({ ...builtIns[1].build(i), files: { '../escape': 'x' } }) }), 'inside the workspace'],
  ['a parser that yields no usage', broken({ parseLine: (l) => builtIns[1].parseLine(l).filter((e) => e.type !== 'usage') }), 'no usage'],
];
for (const [what, def, message] of failing) {
  test(`the contract kit rejects ${what}`, async (t) => {
    const results = await Promise.all(
      harnessContract(def, claude).map(async (c) => {
        try {
          await c.run();
          return null;
        } catch (e) {
          return (e as Error).message;
        }
      }),
    );
    t.true(
      results.some((m) => m?.includes(message)),
      JSON.stringify(results),
    );
  });
}
