import type { Request, ResponseToolkit, ResponseObject } from '@hapi/hapi';
import type { Logger } from 'pino';
import { openEventStream } from '../../core/http/sse.ts';
import { type PipelineRunRepository } from './repository.ts';
import { type RunEventBus } from './bus.ts';
import { isTerminal } from './status.ts';

/**
 * Streams a run's event log (or one step's) as server-sent events: what is logged after
 * `Last-Event-ID`, then each new event as the bus announces its commit. Ends once the run (or the
 * step) has ended and everything up to then is sent; stops when the client goes away.
 */
export class RunStream {
  constructor(
    private readonly runs: PipelineRunRepository,
    private readonly bus: RunEventBus,
    private readonly logger: Logger,
  ) {}

  open(request: Request, h: ResponseToolkit, runId: string, stepName: string | null): ResponseObject {
    return openEventStream(
      request,
      h,
      {
        key: `pipeline-run:${runId}:${stepName ?? ''}`,
        subscribe: (wake) => this.bus.subscribe(runId, wake),
        ended: () => this.ended(runId, stepName),
        after: async (afterId) => (await this.runs.eventsAfter(runId, afterId, stepName)).map((e) => ({ id: e.id, type: e.type, data: e.data })),
      },
      this.logger,
      'pipeline run',
    );
  }

  /** The run has ended and no step is still at work; for a step stream, that step has ended. */
  private async ended(runId: string, stepName: string | null): Promise<boolean> {
    const steps = await this.runs.steps(runId);
    if (stepName !== null) return steps.some((s) => s.name === stepName && isTerminal(s.status));
    const run = await this.runs.byId(runId);
    return !!run && isTerminal(run.status) && steps.every((s) => isTerminal(s.status));
  }
}
