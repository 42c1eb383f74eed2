import { constants as osConstants } from 'node:os';
import { PassThrough, type Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import type { OutputLine, ProcessExit, RunningProcess } from '../../core/ports/runtime.ts';
import { LineQueue } from '../runtime/lines.ts';
import { demultiplex } from './demux.ts';
import { engineMessage, statusOf } from './engine.ts';

export interface DockerProcessInit {
  container: Docker.Container;
  /** The attach stream (multiplexed stdout and stderr). */
  stream: Readable;
  graceMs: number;
  timeoutMs: number | undefined;
  logger: Logger;
}

const SIGNAL_NAMES = new Map(Object.entries(osConstants.signals).map(([name, n]) => [n, name]));

/** How long output may keep flowing after the container ended before the attach stream is cut (unless a slow reader holds it). */
const OUTPUT_SETTLE_MS = 5000;

export class DockerProcess implements RunningProcess {
  readonly exited: Promise<ProcessExit>;
  readonly id: string;
  private readonly output = new LineQueue();
  private readonly outputClosed: Promise<void>;
  private readonly ended: Promise<{ code: number | null }>;
  private timedOut = false;
  private killRequested = false;
  private stopping?: Promise<void>;

  constructor(private readonly init: DockerProcessInit) {
    const { container, stream, timeoutMs, logger } = init;
    this.id = container.id;
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    this.outputClosed = Promise.all([stdout, stderr].map((s) => new Promise((resolve) => s.once('close', resolve)))).then(() => undefined);
    this.output.add(stdout, 'stdout');
    this.output.add(stderr, 'stderr');
    demultiplex(stream, stdout, stderr);

    const timer = timeoutMs
      ? setTimeout(() => {
          this.timedOut = true;
          void this.stop();
        }, timeoutMs)
      : undefined;
    this.ended = (container.wait() as Promise<{ StatusCode: number }>).then(
      (r) => ({ code: r.StatusCode }),
      (err) => {
        logger.error({ err: engineMessage(err), container: this.id }, 'runtime docker: waiting for the container failed');
        return { code: null };
      },
    );
    this.exited = this.ended.then(async ({ code }) => {
      clearTimeout(timer);
      const oomKilled =
        code !== null &&
        (await container.inspect().then(
          (s) => s.State.OOMKilled === true,
          () => false,
        ));
      await this.settleOutput();
      await this.remove();
      return this.exitOf(code, oomKilled);
    });
  }

  lines(): AsyncIterable<OutputLine> {
    return this.output.iterate();
  }

  async kill(): Promise<void> {
    await this.stop();
    await this.exited;
  }

  /**
   * Docker reports a process ended by a signal as 128 + its number (tini, or the engine's kill). That
   * is read as a signal only when we signalled the container or the kernel's OOM killer did;
   * otherwise the code stands as the process gave it.
   */
  private exitOf(code: number | null, oomKilled: boolean): ProcessExit {
    const base = { timedOut: this.timedOut };
    if (code === null) return { exitCode: null, signal: null, ...base };
    if (oomKilled) return { exitCode: null, signal: 'SIGKILL', ...base };
    const signal = code > 128 && this.killRequested ? SIGNAL_NAMES.get(code - 128) : undefined;
    return signal ? { exitCode: null, signal, ...base } : { exitCode: code, signal: null, ...base };
  }

  /** SIGTERM, then SIGKILL after the grace period; the container's PID namespace takes every process with it. */
  private stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.killRequested = true;
      const ended = this.ended.then(() => true);
      await this.signal('SIGTERM');
      if (await Promise.race([ended, sleep(this.init.graceMs).then(() => false)])) return;
      await this.signal('SIGKILL');
      await Promise.race([ended, sleep(10_000)]);
    })();
    return this.stopping;
  }

  private async signal(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    try {
      await this.init.container.kill({ signal });
    } catch (err) {
      // 409: not running any more; 404: already gone.
      if (statusOf(err) !== 409 && statusOf(err) !== 404)
        this.init.logger.warn({ err: engineMessage(err), container: this.id, signal }, 'runtime docker: signalling the container failed');
    }
  }

  /** Waits for the attach stream to deliver the last output; a stream that lingers without a slow reader behind it is cut. */
  private async settleOutput(): Promise<void> {
    for (;;) {
      const done = await Promise.race([this.outputClosed.then(() => true), sleep(OUTPUT_SETTLE_MS).then(() => false)]);
      if (done) return;
      if (!this.output.paused) {
        this.init.stream.destroy();
        return;
      }
    }
  }

  private async remove(): Promise<void> {
    for (let tries = 0; ; tries += 1) {
      try {
        await this.init.container.remove({ force: true, v: true });
        return;
      } catch (err) {
        const status = statusOf(err);
        if (status === 404) return; // gone already
        // 409: removal already in progress, or the engine still tearing the container down; else the engine may be unreachable.
        if (tries >= (status === 409 ? 40 : 5)) {
          this.init.logger.error({ err: engineMessage(err), container: this.id }, 'runtime docker: the container could not be removed');
          return;
        }
        await sleep(status === 409 ? 250 : 1000);
      }
    }
  }
}
