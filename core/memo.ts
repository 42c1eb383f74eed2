/** Entries per memo; the oldest goes first when full. */
const MAX_ENTRIES = 10_000;
/** A backstop only: should a notice of a change be lost, no entry outlives this. */
const MAX_AGE_MS = 10_000;

/** Counts changes: a load that started before one is answered but not remembered. */
export interface Generation {
  generation: number;
}

/** Values read from the database, remembered per process until their owner says they changed. */
export class Memo<V> {
  private readonly entries = new Map<string, { value: V; at: number }>();

  constructor(private readonly changes: Generation) {}

  /**
   * The remembered value, else `load`'s (remembered unless undefined). A load that a change
   * overtook (one committed while it ran) is answered but not remembered.
   */
  async get(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const hit = this.entries.get(key);
    if (hit && Date.now() - hit.at < MAX_AGE_MS) return hit.value;
    const generation = this.changes.generation;
    const value = await load();
    if (value !== undefined && generation === this.changes.generation) {
      this.entries.delete(key);
      if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(key, { value, at: Date.now() });
    }
    return value;
  }

  /** Forgets one key; a load of it under way is not remembered. */
  forget(key: string): void {
    this.changes.generation++;
    this.entries.delete(key);
  }

  /** Forgets everything; loads under way are not remembered. */
  clear(): void {
    this.changes.generation++;
    this.entries.clear();
  }
}
