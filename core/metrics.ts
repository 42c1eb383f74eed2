import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface Sample<L extends string> {
  labels: Partial<Record<L, string>>;
  value: number;
}

/** How long a gauge read from the database is reused: a scrape every few seconds costs one query, not one per scrape and gauge. */
export const SAMPLE_TTL_MS = 5_000;

/** Seconds buckets for what takes milliseconds to a few seconds (requests, claims, dispatches, routing). */
export const FAST_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Seconds buckets for attempts: seconds to hours. */
export const ATTEMPT_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14_400];

/**
 * The one metrics registry of a svc process (per kernel, so several kernels in one test process do
 * not share counters). Core and every plugin add their own metrics here, each about what it owns:
 * counters and histograms it updates as things happen, gauges it samples from its own tables when
 * scraped. `GET /metrics` (the discovery plugin) renders it in the Prometheus text format.
 */
export class Metrics {
  readonly registry = new Registry();

  /** `processMetrics`: the process's own (CPU, memory, event loop, handles), for the registry a kernel serves. */
  constructor({ processMetrics = false }: { processMetrics?: boolean } = {}) {
    if (processMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'svc_' });
  }

  counter<L extends string>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
    return this.existing<Counter<L>>(name) ?? new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  histogram<L extends string>(name: string, help: string, labelNames: readonly L[] = [], buckets = FAST_BUCKETS): Histogram<L> {
    return this.existing<Histogram<L>>(name) ?? new Histogram({ name, help, labelNames, buckets, registers: [this.registry] });
  }

  /**
   * A gauge whose values are read when scraped, through `read` (typically one `sample` shared by
   * several gauges); a label set it reported before and no longer reports is dropped.
   */
  sampledGauge<L extends string>(name: string, help: string, labelNames: readonly L[], read: () => Promise<Sample<L>[]>): Gauge<L> {
    const found = this.existing<Gauge<L>>(name);
    if (found) return found;
    return new Gauge<L>({
      name,
      help,
      labelNames,
      registers: [this.registry],
      async collect() {
        // A database that does not answer leaves the last values: the rest of the scrape still renders.
        const samples = await read().catch(() => null);
        if (!samples) return;
        this.reset();
        for (const { labels, value } of samples) this.set(labels as Record<L, string>, value);
      },
    });
  }

  /** The text a Prometheus scrape takes, and its content type. */
  async render(): Promise<{ text: string; contentType: string }> {
    return { text: await this.registry.metrics(), contentType: this.registry.contentType };
  }

  private existing<M>(name: string): M | undefined {
    return this.registry.getSingleMetric(name) as M | undefined;
  }
}

/** `read` at most once per `ttlMs`: concurrent and close callers share one result (a failed read is not kept). */
export function sample<T>(read: () => Promise<T>, ttlMs = SAMPLE_TTL_MS, now = () => Date.now()): () => Promise<T> {
  let cached: { at: number; value: Promise<T> } | null = null;
  return () => {
    if (cached && now() - cached.at < ttlMs) return cached.value;
    const value = read();
    const entry = { at: now(), value };
    cached = entry;
    value.catch(() => {
      if (cached === entry) cached = null;
    });
    return value;
  };
}

/** Seconds since `since`, for a histogram. */
export function secondsSince(since: number | Date): number {
  return (Date.now() - (since instanceof Date ? since.getTime() : since)) / 1000;
}
