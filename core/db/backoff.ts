/**
 * Delays between attempts to reach something that is away (a database restarting): `baseMs`,
 * doubling with each failure up to `maxMs`, with up to 20 % jitter so replicas do not retry in step.
 */
export class Backoff {
  failures = 0;

  constructor(
    private readonly baseMs: number,
    private readonly maxMs: number,
  ) {}

  /** The delay before the next attempt. */
  next(): number {
    const delay = Math.min(this.maxMs, this.baseMs * 2 ** Math.min(this.failures, 30));
    return Math.round(delay * (1 + Math.random() * 0.2));
  }

  failed(): void {
    this.failures++;
  }

  reset(): void {
    this.failures = 0;
  }
}
