import { constants as osConstants } from 'node:os';
import { StringDecoder } from 'node:string_decoder';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1ContainerStateTerminated, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { OutputLine, ProcessExit, RunningProcess } from '../../core/ports/runtime.ts';
import { statusOf, type KubeApi } from './kube-api.ts';
import { LogLines } from './log-lines.ts';

/** `2024-05-01T10:00:00.123456789Z ` as the log endpoint prefixes each line with timestamps=true. */
const TIMESTAMP = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2}) /;

function parseTimestamp(line: string): { ns: bigint; raw: string; rest: string } | null {
  const m = TIMESTAMP.exec(line);
  if (!m) return null;
  const ms = Date.parse(`${m[1]}${m[3]}`);
  if (Number.isNaN(ms)) return null;
  const fraction = BigInt((m[2] ?? '.').slice(1).padEnd(9, '0'));
  return { ns: BigInt(ms) * 1_000_000n + fraction, raw: `${m[1]}${m[2] ?? ''}${m[3]}`, rest: line.slice(m[0].length) };
}

export function terminatedOf(pod: V1Pod | null, container: string): V1ContainerStateTerminated | undefined {
  const status = pod?.status?.containerStatuses?.find((c) => c.name === container);
  return status?.state?.terminated ?? undefined;
}

/** The container has ended (or the pod is gone): nothing more will run. */
function finished(pod: V1Pod | null, gone: boolean, container: string): boolean {
  return gone || !!terminatedOf(pod, container) || pod?.status?.phase === 'Succeeded' || pod?.status?.phase === 'Failed';
}

const signalName = (n: number) => Object.entries(osConstants.signals).find(([, v]) => v === n)?.[0] ?? null;

export interface PodRun {
  api: KubeApi;
  name: string;
  /** The one container whose log and exit status are the process's. */
  container: string;
  /** Deleted with the pod; null: none. */
  secretName: string | null;
  graceSeconds: number;
  logger: Logger;
  /** Who speaks in log messages (`runtime kubernetes`, `builder kaniko`). */
  who: string;
}

/**
 * A started attempt pod: its log followed line by line (resumed after a dropped connection, by
 * timestamp, without repeating lines), its end read from the container's terminated state, and the
 * Pod and Secret deleted whatever happens.
 */
export class PodProcess implements RunningProcess {
  readonly exited: Promise<ProcessExit>;
  private readonly output = new LogLines();
  private readonly stopFollowing = new AbortController();
  private end: { pod: V1Pod | null; gone: boolean } | null = null;
  /** The pod as last seen when it ended (its container's terminated state), before it was deleted. */
  lastSeen: V1Pod | null = null;
  private timedOut = false;
  private deleted = false;

  constructor(
    private readonly run: PodRun,
    timeoutMs: number | undefined,
  ) {
    const timer = timeoutMs
      ? setTimeout(() => {
          this.timedOut = true;
          void this.deletePod();
        }, timeoutMs)
      : undefined;
    const ended = run.api
      .watchPod(run.name, (pod, gone) => (finished(pod, gone, run.container) ? { pod, gone } : undefined))
      .catch((err: Error) => {
        run.logger.error({ err, pod: run.name }, `${run.who}: lost track of the pod`);
        this.output.note(`[kubernetes: lost track of pod ${run.name}: ${err.message}]`);
        return { pod: null, gone: true };
      });
    const following = this.follow(ended.then((e) => (this.end = e)));
    this.exited = (async () => {
      const end = await ended;
      this.lastSeen = end.pod;
      clearTimeout(timer);
      await following;
      const exit = this.exitOf(end.pod, end.gone);
      this.output.end();
      await this.cleanup();
      return exit;
    })();
  }

  lines(): AsyncIterable<OutputLine> {
    return this.output.iterate();
  }

  async kill(): Promise<void> {
    await this.deletePod();
    await this.exited;
  }

  private async deletePod(): Promise<void> {
    if (this.deleted) return;
    this.deleted = true;
    await this.run.api.remove('pod', this.run.name, this.run.graceSeconds).catch((err: Error) => {
      this.run.logger.error({ err, pod: this.run.name }, `${this.run.who}: could not delete the pod`);
      this.output.note(`[kubernetes: ${err.message}]`);
    });
  }

  private async cleanup(): Promise<void> {
    const { api, name, secretName, logger, who } = this.run;
    if (!this.deleted) await api.remove('pod', name, 0).catch((err: Error) => logger.error({ err, pod: name }, `${who}: pod left behind`));
    this.deleted = true;
    if (secretName) await api.remove('secret', secretName).catch((err: Error) => logger.error({ err, secret: secretName }, `${who}: secret left behind`));
  }

  /**
   * Reads the log until a request made after the container ended has been read to its end. A stream
   * that ends or breaks earlier is opened again from the last line's timestamp; lines already
   * delivered (an earlier timestamp, or as many at the same one) are skipped.
   */
  private async follow(ended: Promise<unknown>): Promise<void> {
    let last: bigint | null = null;
    let lastRaw: string | null = null;
    let atLast = 0;
    let failures = 0;
    for (;;) {
      const finalPass = this.end !== null;
      const fromTs = last;
      const skip = atLast;
      let skipped = 0;
      const deliver = (line: string) => {
        const ts = parseTimestamp(line);
        if (ts && fromTs !== null) {
          if (ts.ns < fromTs) return;
          if (ts.ns === fromTs && skipped < skip) {
            skipped += 1;
            return;
          }
        }
        this.output.push((ts ? ts.rest : line).replace(/\r$/, ''));
        if (!ts) return;
        if (last === null || ts.ns > last) {
          last = ts.ns;
          lastRaw = ts.raw;
          atLast = 1;
        } else if (ts.ns === last) atLast += 1;
      };
      let complete = false;
      try {
        const res = await this.run.api.openLog(this.run.name, this.run.container, lastRaw, this.stopFollowing.signal);
        const decoder = new StringDecoder('utf8');
        let pending = '';
        for await (const chunk of res) {
          pending += decoder.write(chunk as Buffer);
          const parts = pending.split('\n');
          pending = parts.pop()!;
          for (const line of parts) deliver(line);
          await this.output.room();
        }
        pending += decoder.end();
        // An unterminated last line is whole only once the container has ended; otherwise it comes again.
        if (finalPass && pending) deliver(pending);
        complete = true;
        failures = 0;
      } catch (err) {
        const code = statusOf(err);
        // 404: the pod is gone; 400 after the end: its container never ran. Either way there is no more log.
        if (code === 404 || (code === 400 && this.end)) return;
        failures += 1;
        if (finalPass && failures >= 3) {
          this.output.note(`[kubernetes: the rest of the log could not be read: ${(err as Error).message}]`);
          return;
        }
        this.run.logger.warn({ err, pod: this.run.name }, `${this.run.who}: log stream failed; reading it again`);
      }
      if (finalPass && complete) return;
      if (!complete) await sleep(500);
      await Promise.race([ended, sleep(250)]);
    }
  }

  private exitOf(pod: V1Pod | null, gone: boolean): ProcessExit {
    const name = this.run.name;
    const timedOut = this.timedOut || pod?.status?.reason === 'DeadlineExceeded';
    const term = terminatedOf(pod, this.run.container);
    if (pod?.status?.reason)
      this.output.note(`[kubernetes: pod ${name} ${pod.status.phase ?? ''}: ${pod.status.reason}${pod.status.message ? `: ${pod.status.message}` : ''}]`);
    if (!term) {
      if (!this.deleted || !gone)
        this.output.note(`[kubernetes: pod ${name} ended without its container's exit status${gone ? ' (the pod was deleted)' : ''}]`);
      return { exitCode: null, signal: 'SIGKILL', timedOut };
    }
    if (term.reason && !['Completed', 'Error'].includes(term.reason)) {
      this.output.note(`[kubernetes: container ${term.reason}${term.message ? `: ${term.message}` : ''} (exit code ${term.exitCode})]`);
    }
    // A container we stopped reports 128 + the signal that ended it.
    const signal = term.signal ? signalName(term.signal) : (this.deleted || timedOut) && term.exitCode > 128 ? signalName(term.exitCode - 128) : null;
    if (signal) return { exitCode: null, signal, timedOut };
    return { exitCode: term.exitCode, signal: null, timedOut };
  }
}
