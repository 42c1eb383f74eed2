import Boom from '@hapi/boom';
import type { Request, Server } from '@hapi/hapi';
import { JsonNesting } from '../nesting.ts';
import { describeUnstorable } from '../db/storable.ts';

const scans = new WeakMap<Request, JsonNesting>();

/**
 * A body of at most this many bytes, so declared (content-length, not compressed), is left to the
 * check after parsing: V8 parses that much in about a millisecond however it nests, while tapping
 * the stream costs every request a listener and a stream of its own.
 */
const SCAN_ABOVE_BYTES = 16 * 1024;

/** Whether the request says its body is at most SCAN_ABOVE_BYTES, as sent (the HTTP parser holds it to that length). */
function declaredSmall(request: Request): boolean {
  const encoding = request.headers['content-encoding'];
  if (encoding !== undefined && encoding !== 'identity') return false;
  const length = Number(request.headers['content-length']);
  return Number.isInteger(length) && length <= SCAN_ABOVE_BYTES;
}

/**
 * JSON request bodies nested deeper than `limit` are refused before they are parsed: parsing a
 * 1 MB body of `[` takes V8 ~100 ms of the event loop, and the depth check after parsing
 * (storable-input.ts) comes too late for that. The body is scanned as it arrives (hapi's `peek`);
 * at the first opening past the limit that byte is overwritten with `#`, so the JSON parser stops
 * there at once instead of walking the rest, and the 400 hapi answers for the broken JSON is
 * replaced by one naming the limit. Only routes that parse their payload into data are scanned: a
 * raw body (a signed webhook) is never touched, nor is a small one (SCAN_ABOVE_BYTES).
 */
export function installBodyDepthCheck(server: Server, limit: number): void {
  server.ext('onPreAuth', (request, h) => {
    const settings = request.route.settings.payload;
    if (request.method === 'get' || request.method === 'head' || !settings || settings.parse !== true || settings.output !== 'data') return h.continue;
    if (!/^application\/(?:.+\+)?json\b/i.test(String(request.headers['content-type'] ?? ''))) return h.continue;
    if (declaredSmall(request)) return h.continue;
    const scan = new JsonNesting(limit);
    scans.set(request, scan);
    request.events.on('peek', (chunk: Buffer | string) => {
      if (typeof chunk === 'string') return;
      const at = scan.feed(chunk);
      if (at >= 0) chunk[at] = 0x23;
    });
    return h.continue;
  });
  server.ext('onPreResponse', (request, h) => {
    const scan = scans.get(request);
    if (!scan || scan.tooDeepAt === null || !Boom.isBoom(request.response) || request.response.output.statusCode !== 400) return h.continue;
    // Worded as the check after parsing words it (storable-input.ts), naming the field.
    const problem = `is nested more than ${limit} levels deep (at byte ${scan.tooDeepAt} of the request body; the limit is ${limit} levels)`;
    return Boom.badRequest(describeUnstorable({ path: scan.tooDeepPath ?? '', problem }, 'the request body'));
  });
}
