import { PassThrough } from 'node:stream';
import type { Request, ResponseToolkit, ResponseObject } from '@hapi/hapi';
import type { Logger } from 'pino';
import { PipelineRunRepository, type RunEventRow } from './repository.ts';
import { RunEventBus } from './bus.ts';
import { isTerminal } from './status.ts';

/** A comment line now and then keeps proxies from closing a quiet stream; it also re-reads the log. */
export const KEEP_ALIVE_MS = 15_000;

/** One server-sent event: `id`, `event`, and the JSON data on one line. */
export const sseFrame = (e: Pick<RunEventRow, 'id' | 'type' | 'data'>): string => `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify(e.data)}\n\n`;

/** `Last-Event-ID` (a reconnecting EventSource sends it), else `?last_event_id=`, else 0. */
export function resumeAfter(request: Request): number {
  const raw = request.headers['last-event-id'] ?? (request.query as Record<string, unknown>).last_event_id;
  const n = Number(raw);
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}

/**
 * Streams a run's event log (or one step's) as server-sent events: what is logged after
 * `afterId`, then each new event as the bus announces its commit. Ends once the run (or the
 * step) has ended and everything up to then is sent; stops when the client goes away.
 */
export class RunStream {
  constructor(
    private readonly runs: PipelineRunRepository,
    private readonly bus: RunEventBus,
    private readonly logger: Logger,
  ) {}

  open(request: Request, h: ResponseToolkit, runId: string, stepName: string | null): ResponseObject {
    const out = new PassThrough();
    let closed = false;
    let wake: () => void = () => undefined;
    const unsubscribe = this.bus.subscribe(runId, () => wake());
    const close = () => {
      if (closed) return;
      closed = true;
      unsubscribe();
      wake();
      out.end();
    };
    request.raw.req.on('close', close);

    const pump = async () => {
      let last = resumeAfter(request);
      out.write(': stream open\n\n');
      while (!closed) {
        const signalled = new Promise<void>((resolve) => {
          wake = resolve;
        });
        // Decide "ended" before reading: every event up to that state is then in the read.
        const ended = await this.ended(runId, stepName);
        for (let batch = await this.runs.eventsAfter(runId, last, stepName); batch.length > 0 && !closed; batch = await this.runs.eventsAfter(runId, last, stepName)) {
          for (const event of batch) out.write(sseFrame(event));
          last = Number(batch[batch.length - 1].id);
        }
        if (ended) break;
        let quiet = false;
        const timer = setTimeout(() => {
          quiet = true;
          wake();
        }, KEEP_ALIVE_MS);
        await signalled;
        clearTimeout(timer);
        if (quiet && !closed) out.write(': keep-alive\n\n');
      }
    };
    pump()
      .catch((err) => this.logger.warn({ err, runId }, 'pipeline run stream failed'))
      .finally(close);

    return h
      .response(out)
      .type('text/event-stream')
      .header('cache-control', 'no-cache')
      .header('content-encoding', 'identity')
      .header('x-accel-buffering', 'no');
  }

  /** The run has ended and no step is still at work; for a step stream, that step has ended. */
  private async ended(runId: string, stepName: string | null): Promise<boolean> {
    const steps = await this.runs.steps(runId);
    if (stepName !== null) return steps.some((s) => s.name === stepName && isTerminal(s.status));
    const run = await this.runs.byId(runId);
    return !!run && isTerminal(run.status) && steps.every((s) => isTerminal(s.status));
  }
}
