import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { emitEvent } from '../core/events/emit.ts';
import { checkRow, cpuMeter, fmt, goalRow, kernelWithProject, knob, pgWaits, printTable, type Row } from './lib.ts';

const EVENTS = knob('BENCH_WEBHOOK_EVENTS', 5000);
const SUBSCRIPTIONS = knob('BENCH_WEBHOOK_SUBSCRIPTIONS', 1);
const GOAL_PER_S = 1000;
const TIMEOUT_MS = 120_000;
const SECRET = 'bench-webhook-secret-0123456789';

/**
 * The receiver, in its own process so it does not share this one's event loop: answers 200 at
 * once over keep-alive, checks X-Svc-Signature-256 of every request, and reports its counts on GET.
 */
const RECEIVER = `
const http = require('node:http');
const { createHmac } = require('node:crypto');
const secret = process.argv[1];
let ok = 0, bad = 0;
const seen = new Set();
let dup = 0;
const server = http.createServer((req, res) => {
  if (req.method === 'GET') return res.end(JSON.stringify({ ok, bad, dup }));
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const sig = 'sha256=' + createHmac('sha256', secret).update(body).digest('hex');
    if (sig === req.headers['x-svc-signature-256']) ok++; else bad++;
    const id = req.headers['x-svc-delivery'];
    if (seen.has(id)) dup++; else seen.add(id);
    res.end('ok');
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

async function startReceiver(): Promise<{ url: string; proc: ChildProcess }> {
  const proc = spawn(process.execPath, ['-e', RECEIVER, SECRET], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [chunk] = await once(proc.stdout!, 'data');
  return { url: `http://127.0.0.1:${String(chunk).trim()}/hook`, proc };
}

/**
 * Deliveries per second: EVENTS events committed in one transaction on a project whose org has
 * SUBSCRIPTIONS subscriptions; the clock runs from that commit until every delivery is recorded
 * as succeeded (fan-out, signing, the HTTP round trip, and the batched result writes).
 */
export async function runWebhooksBench(): Promise<string[]> {
  const failures: string[] = [];
  const rows: Row[] = [];
  const receiver = await startReceiver();
  const { srv, api, projectId } = await kernelWithProject(['api', 'orchestrator']);
  const expected = EVENTS * SUBSCRIPTIONS;
  const name = `Deliveries per second: ${fmt.int(EVENTS)} events × ${SUBSCRIPTIONS} subscription(s) to a local receiver`;
  try {
    const db = srv.kernel.db;
    const { org_id } = await db('projects').where({ id: projectId }).first('org_id');
    for (let i = 0; i < SUBSCRIPTIONS; i++) {
      const res = await api.post(`/orgs/${org_id}/webhooks`, { url: `${receiver.url}/${i}`, events: ['bench.*'], secret: SECRET });
      if (res.statusCode !== 201) throw new Error(`subscribe: ${res.statusCode} ${JSON.stringify(res.body)}`);
    }
    const waits = await pgWaits(srv.kernel.databaseUrl);
    const meter = cpuMeter();
    await db.transaction(async (trx) => {
      for (let i = 0; i < EVENTS; i++) await emitEvent(trx, { project_id: projectId, type: 'bench.tick', source: 'app', payload: { i } });
    });
    const started = performance.now();
    let done = 0;
    while (done < expected && performance.now() - started < TIMEOUT_MS) {
      await new Promise((r) => setTimeout(r, 20));
      done = Number((await db('webhook_deliveries').where({ status: 'succeeded' }).count({ n: '*' }).first())!.n);
    }
    const seconds = (performance.now() - started) / 1000;
    const load = { cpu: meter.stop(), waits: await waits.stop() };
    const stats = (await (await fetch(receiver.url)).json()) as { ok: number; bad: number; dup: number };
    const other = await db('webhook_deliveries').whereNot({ status: 'succeeded' }).count({ n: '*' }).first();
    rows.push(
      goalRow(name, 'deliveries/s (commit → all recorded succeeded)', done / seconds, (v) => fmt.rate(v), { atLeast: GOAL_PER_S }),
      { scenario: name, figure: 'elapsed', value: fmt.s(seconds) },
      { scenario: name, figure: 'CPU cores: machine = node + postgres + others', value: load.cpu },
      { scenario: name, figure: 'PostgreSQL backends waited on', value: load.waits },
      checkRow(
        name,
        'deliveries succeeded / not succeeded',
        `${fmt.int(done)} / ${fmt.int(Number(other!.n))}`,
        `${fmt.int(expected)} / 0`,
        done === expected && Number(other!.n) === 0,
        failures,
      ),
      checkRow(
        name,
        'received with a valid signature / invalid / duplicate',
        `${fmt.int(stats.ok)} / ${stats.bad} / ${stats.dup}`,
        `${fmt.int(expected)} / 0 / 0`,
        stats.ok === expected && stats.bad === 0 && stats.dup === 0,
        failures,
      ),
    );
  } finally {
    await srv.stop();
    receiver.proc.kill();
  }
  printTable('svc webhooks benchmark', rows, [
    'a kernel with roles [api, orchestrator] in this process (its WebhookDispatcher, woken by the events NOTIFY after the commit); the receiver is a separate Node process on 127.0.0.1 that answers 200 at once over keep-alive',
    'each delivery: the event taken off the outbox and a delivery row written (one transaction per 200 events), a CloudEvents body signed with both schemes, one HTTP POST, the result written in batches',
    `knobs: BENCH_WEBHOOK_EVENTS=${EVENTS}, BENCH_WEBHOOK_SUBSCRIPTIONS=${SUBSCRIPTIONS}; the checks: every delivery succeeded, and the receiver saw each once with a valid X-Svc-Signature-256`,
  ]);
  return failures;
}
