/**
 * Callbacks that domains register at another domain's seam (phase listeners, request checks,
 * sync listeners, housekeeping). The owner of the seam subclasses this and decides how to call them.
 */
export class Registry<T> {
  protected readonly entries: T[] = [];

  add(entry: T): void {
    this.entries.push(entry);
  }
}
