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

/**
 * The text of a whole multiplexed answer (`GET /containers/{id}/logs` without follow): the frames'
 * payloads in order, stdout and stderr as they interleaved. An answer that is not framed (a
 * container with a TTY) is its own text.
 */
export function demultiplexedText(answer: Buffer): string {
  if (answer.length > 0 && answer.length < 8) return answer.toString('utf8');
  const parts: Buffer[] = [];
  for (let at = 0; at + 8 <= answer.length;) {
    // A header is a stream type 0..3 and three zero bytes.
    if (answer[at] > 3 || answer.readUIntBE(at + 1, 3) !== 0) return answer.toString('utf8');
    const end = Math.min(answer.length, at + 8 + answer.readUInt32BE(at + 4));
    parts.push(answer.subarray(at + 8, end));
    at = end;
  }
  return Buffer.concat(parts).toString('utf8');
}
