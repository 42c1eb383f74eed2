import { isDatabaseUnavailable } from './db/unavailable.ts';

/** A batch item's own failure: the batch ran, but this item's caller gets `error`. */
export class ItemFailed {
  constructor(readonly error: unknown) {}
}

interface Waiting<I, O> {
  item: I;
  resolve: (out: O) => void;
  reject: (err: unknown) => void;
}

/**
 * Coalesces concurrent calls into batches. A call made while nothing is in flight goes out at
 * once, alone; calls made while `concurrency` batches are in flight wait for one to return and
 * then go out together. Idle, nothing waits; under load one round trip serves many callers, which
 * is what a database statement costs most in (a syscall each way).
 *
 * `run` answers one output per item, in order; an `ItemFailed` output rejects that item alone. A
 * batch of several whose `run` throws is run again item by item, so an error one caller's item
 * causes (a value the database refuses) reaches that caller alone and the others' items still land;
 * `run` must therefore change nothing when it throws (one statement, or one transaction). Only an
 * error no item caused (the database unreachable) rejects the whole batch at once.
 */
export class Batcher<I, O> {
  private readonly queue: Waiting<I, O>[] = [];
  private inFlight = 0;

  constructor(
    private readonly run: (items: I[]) => Promise<(O | ItemFailed)[]>,
    private readonly limits: { maxBatch: number; concurrency: number } = { maxBatch: 256, concurrency: 1 },
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.flush();
    });
  }

  private flush(): void {
    while (this.inFlight < this.limits.concurrency && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.limits.maxBatch);
      this.inFlight++;
      this.run(batch.map((w) => w.item))
        .then(
          (outs) => {
            if (outs.length !== batch.length) throw new Error(`a batch of ${batch.length} answered ${outs.length} results`);
            batch.forEach((w, i) => {
              const out = outs[i];
              if (out instanceof ItemFailed) w.reject(out.error);
              else w.resolve(out);
            });
          },
          (err) => (batch.length > 1 && !isDatabaseUnavailable(err) ? this.oneByOne(batch) : batch.forEach((w) => w.reject(err))),
        )
        .catch((err) => batch.forEach((w) => w.reject(err)))
        .finally(() => {
          this.inFlight--;
          this.flush();
        });
    }
  }

  /** After a failed batch: each item alone, one after the other (a failed batch is rare, and the pool stays free). */
  private async oneByOne(batch: Waiting<I, O>[]): Promise<void> {
    for (const w of batch) {
      try {
        const [out] = await this.run([w.item]);
        if (out instanceof ItemFailed) w.reject(out.error);
        else w.resolve(out as O);
      } catch (err) {
        w.reject(err);
      }
    }
  }
}
