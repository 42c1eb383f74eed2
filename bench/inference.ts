import { startFakeLlm } from '../test/fixtures/fake-llm.ts';
import { ascending, checkRow, fmt, goalRow, kernelWithProject, knob, percentile, printTable, type Row } from './lib.ts';

const CALLS = knob('BENCH_INFERENCE_CALLS', 300);
const TOKENS = knob('BENCH_INFERENCE_TOKENS', 5000);
const WARMUP = 30;

interface Timed {
  /** From sending the request to the first byte of the body. */
  ttfb: number;
  /** From the first byte to the last. */
  body: number;
  text: string;
}

async function timedStream(url: string, headers: Record<string, string>, body: unknown): Promise<Timed> {
  const at = performance.now();
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let first = 0;
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (!first) first = performance.now();
    text += decoder.decode(value, { stream: true });
  }
  return { ttfb: first - at, body: performance.now() - first, text };
}

const contentChunks = (text: string): number => text.split('\n\n').filter((b) => b.includes('"content":" tok"') || b.includes('"text":" tok"')).length;

/**
 * Time to first byte of a streamed chat completion direct to the fake upstream and through svc's
 * gateway, interleaved in one run (so both see the same machine); then a long stream's tokens per
 * second through the gateway, passed through (chat) and translated (Anthropic messages).
 */
export async function runInferenceBench(): Promise<string[]> {
  const failures: string[] = [];
  const rows: Row[] = [];
  const fake = await startFakeLlm();
  const k = await kernelWithProject(['api']);
  try {
    const { url } = k.srv;
    const secret = await k.api.post('/system/secrets', { name: 'BENCH_FAKE_KEY', value: fake.apiKey });
    if (secret.statusCode !== 201) throw new Error(`secret: ${JSON.stringify(secret.body)}`);
    const target = await k.api.post('/inference/targets', { name: 'fake', kind: 'openai', base_url: `${fake.url}/v1`, credential_secret: 'BENCH_FAKE_KEY' });
    if (target.statusCode !== 201) throw new Error(`target: ${JSON.stringify(target.body)}`);
    const orgId = (await k.api.get(`/projects/${k.projectId}`)).body.org_id as string;
    const messages = [{ role: 'user', content: 'Say hello' }];
    const direct = () =>
      timedStream(`${fake.url}/v1/chat/completions`, { authorization: `Bearer ${fake.apiKey}` }, { model: 'gpt-fake-1', messages, stream: true });
    const gateway = () =>
      timedStream(
        `${url}/inference/v1/chat/completions`,
        { authorization: `Bearer ${k.token}`, 'x-svc-org': orgId },
        { model: 'fake/gpt-fake-1', messages, stream: true },
      );
    for (let i = 0; i < WARMUP; i++) await Promise.all([direct(), gateway()].map((p) => p.then(() => undefined)));
    const directTtfb: number[] = [];
    const gatewayTtfb: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      // one after the other, alternating which goes first
      const pair = i % 2 ? [direct, gateway] : [gateway, direct];
      for (const run of pair) (run === direct ? directTtfb : gatewayTtfb).push((await run()).ttfb);
    }
    const d = ascending(directTtfb);
    const g = ascending(gatewayTtfb);
    rows.push({ scenario: 'direct to the fake', figure: 'TTFB p50 / p95', value: `${fmt.ms(percentile(d, 50))} / ${fmt.ms(percentile(d, 95))}` });
    rows.push({ scenario: 'through svc (chat)', figure: 'TTFB p50 / p95', value: `${fmt.ms(percentile(g, 50))} / ${fmt.ms(percentile(g, 95))}` });
    rows.push(goalRow('through svc (chat)', 'added TTFB p50', percentile(g, 50) - percentile(d, 50), (v) => fmt.ms(v), { atMost: 2 }));
    rows.push({ scenario: 'through svc (chat)', figure: 'added TTFB p95', value: fmt.ms(percentile(g, 95) - percentile(d, 95)) });

    const model = `bulk-${TOKENS}-gpt`;
    const long = [
      [
        'direct to the fake',
        () => timedStream(`${fake.url}/v1/chat/completions`, { authorization: `Bearer ${fake.apiKey}` }, { model, messages, stream: true }),
      ],
      [
        'through svc, chat (passed through)',
        () =>
          timedStream(
            `${url}/inference/v1/chat/completions`,
            { authorization: `Bearer ${k.token}`, 'x-svc-org': orgId },
            { model: `fake/${model}`, messages, stream: true },
          ),
      ],
      [
        'through svc, Anthropic messages (translated)',
        () =>
          timedStream(
            `${url}/inference/v1/messages`,
            { 'x-api-key': k.token, 'x-svc-org': orgId },
            { model: `fake/${model}`, max_tokens: TOKENS, messages, stream: true },
          ),
      ],
    ] as const;
    for (const [scenario, run] of long) {
      await run();
      const got = await run();
      const chunks = contentChunks(got.text);
      const seconds = (got.ttfb + got.body) / 1000;
      rows.push({
        scenario,
        figure: `${TOKENS}-token stream, tokens/s`,
        value: `${Math.round(chunks / seconds).toLocaleString('en')} (${fmt.ms(got.ttfb + got.body)})`,
      });
      rows.push(checkRow(scenario, 'tokens received', String(chunks), String(TOKENS), chunks === TOKENS, failures));
    }
  } finally {
    await k.srv.stop();
    await fake.stop();
  }
  printTable('svc inference gateway benchmark', rows, [
    `streamed chat completions, one at a time: ${CALLS} direct to the fake upstream and ${CALLS} through svc, interleaved after ${WARMUP} warm-up pairs; the fake, the server and this client share one process (in-process server, as bench/streams.ts)`,
    'TTFB: request sent to first body byte; through svc it includes authentication, model resolution, the usage row of the call before, and the upstream connection (kept alive)',
    `tokens/s: one ${TOKENS}-chunk stream written back to back by the fake, counted at the client (first request to last byte)`,
    'knobs BENCH_INFERENCE_CALLS, BENCH_INFERENCE_TOKENS',
  ]);
  return failures;
}
