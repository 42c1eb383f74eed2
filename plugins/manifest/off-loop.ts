import Boom from '@hapi/boom';
import { Worker } from 'node:worker_threads';
import { MODULE_EXT } from '../../core/module-ext.ts';
import { mayNestBeyond } from '../../core/nesting.ts';
import type { ParseLimits } from '../../core/parse-limits.ts';
import { loadManifest, manifestTextProblem, parseYaml, type ManifestResult } from '../../domain/manifest/parse.ts';
import type { ManifestProblem } from '../../domain/manifest/types.ts';
import type { ParseJob } from './parse-worker.ts';

const WORKER_FILE = new URL(`./parse-worker${MODULE_EXT}`, import.meta.url);
/** A worker's heap: a 512 KB manifest needs a few tens of MB; more is a document built to exhaust it. */
const WORKER_HEAP_MB = 256;

/** The worker; from the sources (tests, development) it registers tsx first, which a worker does not inherit. */
function startWorker(): Worker {
  const options = { resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB, maxYoungGenerationSizeMb: 32 } };
  if (MODULE_EXT !== '.ts') return new Worker(WORKER_FILE, options);
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  const code = `import(${tsx}).then((m) => m.register()).then(() => import(${JSON.stringify(WORKER_FILE.href)}))`;
  return new Worker(code, { ...options, eval: true });
}

type Parsed = { doc: unknown; errors: ManifestProblem[] };
interface Pending {
  job: ParseJob;
  resolve(value: unknown): void;
  reject(err: Error): void;
}
interface Slot {
  worker: Worker;
  ready: boolean;
  current: (Pending & { timer: NodeJS.Timeout }) | null;
}

/**
 * Manifest parsing that keeps the event loop free (issue 29 item 5). Nesting beyond the limit is
 * refused before anything parses (core/nesting.ts). A small text the scan can vouch for parses in
 * place; a larger one (over `off_loop_bytes`), or one that might nest deeper than the scan saw,
 * goes to a small pool of worker threads, where a parse that runs past `timeout_ms` (or past the
 * worker's heap) stops that worker and answers 422. Workers start on first use and are unref'd.
 */
export class OffLoopParser {
  private readonly slots: Slot[] = [];
  private readonly queue: Pending[] = [];
  private nextId = 1;
  private closed = false;

  constructor(
    readonly limits: ParseLimits,
    private readonly size = 2,
  ) {}

  /**
   * Parse, validate and normalize a manifest (domain/manifest/parse.ts loadManifest), off the loop
   * when large. A text too large or nested too deeply is refused, 422 naming `field` and the limit:
   * a small one by the scan here, a large one by the same scan in the worker.
   */
  async load(text: string, field: string): Promise<ManifestResult> {
    if (Buffer.byteLength(text, 'utf8') <= this.limits.off_loop_bytes) {
      const problem = manifestTextProblem(text, this.limits.max_depth);
      if (problem) throw Boom.badData(`${field}: ${problem}`);
      if (!mayNestBeyond(text, this.limits.max_depth)) return loadManifest(text, this.limits.max_depth);
    }
    const answer = (await this.run('load', text, field)) as ManifestResult | { refused: string };
    if ('refused' in answer) throw Boom.badData(`${field}: ${answer.refused}`);
    return answer;
  }

  /** YAML → plain data (parseYaml), off the loop when large. */
  async parse(text: string, field: string): Promise<Parsed> {
    if (Buffer.byteLength(text, 'utf8') <= this.limits.off_loop_bytes && !mayNestBeyond(text, this.limits.max_depth))
      return parseYaml(text, this.limits.max_depth);
    return (await this.run('parse', text, field)) as Parsed;
  }

  /** Stops the workers; later parses start new ones only if not closed. */
  async close(): Promise<void> {
    this.closed = true;
    const slots = this.slots.splice(0);
    for (const p of this.queue.splice(0)) p.reject(new Error('the manifest parser stopped'));
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  private run(kind: ParseJob['kind'], text: string, field: string): Promise<unknown> {
    if (this.closed) return Promise.reject(new Error('the manifest parser stopped'));
    return new Promise((resolve, reject) => {
      this.queue.push({ job: { id: this.nextId++, kind, text, maxDepth: this.limits.max_depth }, resolve, reject: (err) => reject(this.answer(err, field)) });
      this.dispatch();
    });
  }

  /** What the request hears: 422 for a document too slow or too big to parse, the error otherwise. */
  private answer(err: Error, field: string): Error {
    if (err instanceof TooSlow) return Boom.badData(`${field}: the document took too long to parse (the limit is ${this.limits.timeout_ms} ms)`);
    if ((err as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY') {
      return Boom.badData(`${field}: the document needs too much memory to parse (the limit is ${WORKER_HEAP_MB} MB)`);
    }
    return err;
  }

  private dispatch(): void {
    while (this.queue.length) {
      const slot = this.slots.find((s) => s.ready && !s.current);
      if (!slot) {
        if (this.slots.length < this.size) this.spawn();
        return;
      }
      const next = this.queue.shift()!;
      const timer = setTimeout(() => this.fail(slot, new TooSlow()), this.limits.timeout_ms);
      slot.current = { ...next, timer };
      slot.worker.postMessage(next.job);
    }
  }

  private spawn(): void {
    const worker = startWorker();
    worker.unref();
    const slot: Slot = { worker, ready: false, current: null };
    this.slots.push(slot);
    worker.on('message', (m: { ready?: true; id?: number; json?: string; refused?: string; error?: string }) => {
      if (m.ready) {
        slot.ready = true;
      } else if (slot.current && m.id === slot.current.job.id) {
        const done = slot.current;
        clearTimeout(done.timer);
        slot.current = null;
        if (m.error !== undefined) done.reject(new Error(m.error));
        else if (m.refused !== undefined) done.resolve({ refused: m.refused });
        else done.resolve(JSON.parse(m.json ?? 'null'));
      }
      this.dispatch();
    });
    worker.on('error', (err) => this.fail(slot, err));
    worker.on('exit', () => this.fail(slot, new Error('the manifest parser worker exited')));
  }

  /** A worker that timed out, crashed or ran out of heap is dropped with its job; the queue goes on. */
  private fail(slot: Slot, err: Error): void {
    const at = this.slots.indexOf(slot);
    if (at < 0) return;
    this.slots.splice(at, 1);
    void slot.worker.terminate();
    const current = slot.current;
    slot.current = null;
    if (current) {
      clearTimeout(current.timer);
      current.reject(err);
    } else if (!slot.ready && !this.slots.some((s) => s.ready)) {
      // A worker that cannot even start fails what waits, rather than retrying forever.
      for (const p of this.queue.splice(0)) p.reject(err);
    }
    if (!this.closed) this.dispatch();
  }
}

class TooSlow extends Error {
  constructor() {
    super('the document took too long to parse');
  }
}
