/**
 * Concurrent identical reads made as one. Calls for a key gather until the event loop's current
 * turn is over (setImmediate), then one load runs and every caller of the group gets its answer;
 * a call made once that load has started waits for the next group. So a caller never gets an
 * answer read before it asked: a stream woken by a commit always reads after that commit, however
 * many followers share the read. Errors reach every caller of the group.
 */
export class SharedReads {
  private readonly gathering = new Map<string, Promise<unknown>>();

  read<V>(key: string, load: () => Promise<V>): Promise<V> {
    const open = this.gathering.get(key);
    if (open) return open as Promise<V>;
    const result = new Promise<V>((resolve, reject) => {
      setImmediate(() => {
        this.gathering.delete(key);
        load().then(resolve, reject);
      });
    });
    this.gathering.set(key, result);
    return result;
  }
}
