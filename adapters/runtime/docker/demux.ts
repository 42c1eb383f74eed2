import type { PassThrough, Readable } from 'node:stream';

/**
 * Splits the Engine API's multiplexed attach stream (frames of an 8-byte header: stream type, three
 * zero bytes, big-endian payload size) into stdout and stderr. Unlike docker-modem's demuxStream it
 * honours backpressure: while a target is full the source is paused, so a slow reader slows the
 * container down instead of buffering its output here without bound.
 */
export function demultiplex(source: Readable, stdout: PassThrough, stderr: PassThrough): void {
  let pending: Buffer = Buffer.alloc(0);
  const full = new Set<PassThrough>();
  source.on('data', (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (pending.length >= 8) {
      const size = pending.readUInt32BE(4);
      if (pending.length < 8 + size) break;
      // 1 stdout, 2 stderr, 3 an error the engine reports about the stream itself.
      const target = pending[0] === 1 ? stdout : stderr;
      const payload = pending.subarray(8, 8 + size);
      pending = pending.subarray(8 + size);
      if (!target.write(payload) && !full.has(target)) {
        full.add(target);
        source.pause();
        target.once('drain', () => {
          full.delete(target);
          if (full.size === 0) source.resume();
        });
      }
    }
  });
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    stdout.end();
    stderr.end();
  };
  source.once('end', end);
  source.once('close', end);
  source.once('error', end);
}
