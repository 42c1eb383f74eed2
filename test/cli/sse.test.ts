import test from 'ava';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context } from '../../cli/config.ts';
import { ApiError, CliError } from '../../cli/errors.ts';
import { SseParser, followEventStream, type SseEvent } from '../../cli/sse.ts';

/** Feed `text` cut at every position listed in `cuts`, and end the stream. */
function parse(chunks: (string | Uint8Array)[], lastEventId?: string): SseEvent[] {
  const parser = new SseParser(lastEventId);
  return [...chunks.flatMap((c) => parser.feed(c)), ...parser.end()];
}

const STREAM = 'id: 1\nevent: step.status\ndata: {"step_name":"build","status":"running"}\n\n: keepalive\n\nid: 2\nevent: step.log\ndata: {"line":"hi"}\n\n';
const EXPECTED = [
  { id: '1', event: 'step.status', data: '{"step_name":"build","status":"running"}' },
  { id: '2', event: 'step.log', data: '{"line":"hi"}' },
];

test('events, comments and ids, from one chunk', (t) => {
  t.deepEqual(parse([STREAM]), EXPECTED);
});

test('the same events whatever the chunking: every split point, one byte at a time, CRLF and CR line ends', (t) => {
  for (let i = 0; i <= STREAM.length; i++) t.deepEqual(parse([STREAM.slice(0, i), STREAM.slice(i)]), EXPECTED, `split at ${i}`);
  t.deepEqual(parse([...STREAM]), EXPECTED);
  const crlf = STREAM.replaceAll('\n', '\r\n');
  for (let i = 0; i <= crlf.length; i++) t.deepEqual(parse([crlf.slice(0, i), crlf.slice(i)]), EXPECTED, `CRLF split at ${i}`);
  const cr = STREAM.replaceAll('\n', '\r');
  for (let i = 0; i <= cr.length; i++) t.deepEqual(parse([cr.slice(0, i), cr.slice(i)]), EXPECTED, `CR split at ${i}`);
});

test('UTF-8 split inside a character, and a leading BOM', (t) => {
  const bytes = new TextEncoder().encode('\uFEFFdata: héllo wörld 🎉\n\n');
  for (let i = 0; i <= bytes.length; i++) {
    t.deepEqual(parse([bytes.slice(0, i), bytes.slice(i)]), [{ id: undefined, event: 'message', data: 'héllo wörld 🎉' }], `split at byte ${i}`);
  }
});

test('multi-line data joins with \\n; field forms: no space, no colon, unknown fields, empty data', (t) => {
  const text = 'data: first\ndata:second\ndata\ndata:  two spaces\nfoo: bar\nevent:x\n\n' + 'data:\n\n' + 'event: empty\n\n';
  t.deepEqual(parse([text]), [
    { id: undefined, event: 'x', data: 'first\nsecond\n\n two spaces' },
    { id: undefined, event: 'message', data: '' },
  ]);
});

test('ids persist across events, an empty id clears it, a NUL id is ignored; retry is read', (t) => {
  const parser = new SseParser('7');
  const events = parser.feed('data: a\n\nid: 9\ndata: b\n\ndata: c\n\nid: x\0y\ndata: d\n\nid\ndata: e\n\nretry: 2500\nretry: soon\n');
  t.deepEqual(
    events.map((e) => [e.id, e.data]),
    [
      ['7', 'a'],
      ['9', 'b'],
      ['9', 'c'],
      ['9', 'd'],
      [undefined, 'e'],
    ],
  );
  t.is(parser.retryMs, 2500);
});

test('an event without its blank line is dropped at the end of the connection, but a CR-ended blank line counts', (t) => {
  t.deepEqual(parse(['data: whole\n\ndata: cut']), [{ id: undefined, event: 'message', data: 'whole' }]);
  t.deepEqual(parse(['data: x\r\r']), [{ id: undefined, event: 'message', data: 'x' }]);
  const parser = new SseParser('2');
  t.deepEqual(parser.feed('id: 3\ndata: half'), []);
  parser.reset();
  t.is(parser.lastEventId, '2', 'the id of an event that never arrived is not resumed from');
  t.deepEqual(parser.feed('data: next\n\n'), [{ id: '2', event: 'message', data: 'next' }]);
});

// --- followEventStream against a real HTTP server -------------------------------------------------

type Script = (req: IncomingMessage, res: ServerResponse, n: number) => void;

async function serve(script: Script) {
  const seen: { lastEventId?: string; authorization?: string; accept?: string }[] = [];
  const server = createServer((req, res) => {
    seen.push({ lastEventId: req.headers['last-event-id'] as string | undefined, authorization: req.headers.authorization, accept: req.headers.accept });
    script(req, res, seen.length);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const ctx = { apiUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: 'tok', json: false } as Context;
  const close = () => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { ctx, seen, close };
}

const sse = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'text/event-stream' });
const event = (id: number, data: string) => `id: ${id}\nevent: e\ndata: ${data}\n\n`;

test('follow: reconnects with Last-Event-ID after a broken connection and after an early end, until done', async (t) => {
  const { ctx, seen, close } = await serve((req, res, n) => {
    sse(res);
    if (n === 1) {
      res.write(event(1, 'a') + 'id: 2\ndata: half');
      setTimeout(() => res.destroy(), 20); // the connection breaks in the middle of event 2
    } else if (n === 2)
      res.end(event(2, 'b')); // a clean end, but not done yet
    else res.end(event(3, 'end'));
  });
  const got: SseEvent[] = [];
  const reconnects: number[] = [];
  await followEventStream(ctx, '/runs/x/stream', {
    onEvent: (e) => got.push(e),
    done: () => got.at(-1)?.data === 'end',
    retryMs: 10,
    onReconnect: (n) => reconnects.push(n),
  });
  t.deepEqual(
    got.map((e) => [e.id, e.data]),
    [
      ['1', 'a'],
      ['2', 'b'],
      ['3', 'end'],
    ],
  );
  t.deepEqual(
    seen.map((s) => s.lastEventId),
    [undefined, '1', '2'],
  );
  t.like(seen[0], { authorization: 'Bearer tok', accept: 'text/event-stream' });
  t.deepEqual(reconnects, [1, 1]);
  await close();
});

test('follow: an error status is an ApiError with the server message; a 5xx is retried, then given up', async (t) => {
  const notFound = await serve((req, res) =>
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"statusCode":404,"error":"Not Found","message":"pipeline run prun_x not found"}'),
  );
  const error = await t.throwsAsync(followEventStream(notFound.ctx, '/p', { onEvent: () => {}, done: () => false }), { instanceOf: ApiError });
  t.is(error?.message, 'pipeline run prun_x not found');
  t.is((error as ApiError).statusCode, 404);
  t.is(notFound.seen.length, 1);
  await notFound.close();

  const down = await serve((req, res) => res.writeHead(503).end());
  const gaveUp = await t.throwsAsync(followEventStream(down.ctx, '/p', { onEvent: () => {}, done: () => false, retryMs: 1, maxRetries: 2 }), {
    instanceOf: CliError,
  });
  t.regex(gaveUp?.message ?? '', /^lost the event stream \/p after 2 reconnection attempts: /);
  t.is(down.seen.length, 3);
  await down.close();

  // Keep-alive comments are not progress: a stream that only ever says hello and ends is given up too.
  const idle = await serve((req, res) => (sse(res), res.end(': stream open\n\n: keep-alive\n\n')));
  await t.throwsAsync(followEventStream(idle.ctx, '/p', { onEvent: () => {}, done: () => false, retryMs: 1, maxRetries: 3 }), {
    message: 'lost the event stream /p after 3 reconnection attempts: the stream ended early',
  });
  t.is(idle.seen.length, 4);
  await idle.close();
});

test('follow: a server that cannot be reached, or that answers JSON, is a CliError', async (t) => {
  const { ctx, close } = await serve((req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  const json = await t.throwsAsync(followEventStream(ctx, '/p', { onEvent: () => {}, done: () => false }), { instanceOf: CliError });
  t.is(json?.message, 'GET /p answered application/json, not an event stream (HTTP 200)');
  await close();
  const gone = await t.throwsAsync(followEventStream(ctx, '/p', { onEvent: () => {}, done: () => false }), { instanceOf: CliError });
  t.regex(gone?.message ?? '', /^cannot reach the svc API at http:\/\/127\.0\.0\.1:\d+ \(GET \/p\): /);
});
