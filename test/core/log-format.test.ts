import test from 'ava';
import { PassThrough, Writable } from 'node:stream';
import { createLogger, logDestination } from '../../core/logger.ts';
import { prettyLine } from '../../core/log-format.ts';
import { bootstrapAdmin, startTestServer } from '../support/server.ts';

/** A stream that keeps what is written, line by line, and says whether it is a terminal. */
function sink(isTTY: boolean): { stream: Writable & { isTTY?: boolean }; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({ write: (chunk, _enc, done) => (lines.push(...String(chunk).split('\n').filter(Boolean)), done()) }) as Writable & {
    isTTY?: boolean;
  };
  stream.isTTY = isTTY;
  return { stream, lines };
}

test('auto is JSON when the output is not a terminal, one readable line per record when it is; pretty and json force either', (t) => {
  const cases = [
    { format: 'auto', tty: false, json: true },
    { format: 'auto', tty: true, json: false },
    { format: 'json', tty: true, json: true },
    { format: 'pretty', tty: false, json: false },
  ] as const;
  for (const { format, tty, json } of cases) {
    const out = sink(tty);
    const logger = createLogger('info', logDestination(format, out.stream));
    logger.info({ jobId: 'job_1', note: 'two words' }, 'job claimed');
    t.is(out.lines.length, 1, `${format} on ${tty ? 'a terminal' : 'a pipe'}: one line`);
    const line = out.lines[0].replace(/\u001b\[\d+m/g, ''); // colours on a terminal
    if (json) t.like(JSON.parse(line), { msg: 'job claimed', jobId: 'job_1', level: 30 });
    else {
      t.throws(() => JSON.parse(line));
      t.regex(line, /^\d\d:\d\d:\d\d\.\d{3}/, 'the time of day first');
      t.true(line.includes('INFO') && line.includes('job claimed') && line.includes('jobId=job_1') && line.includes('note="two words"'), line);
      t.false(line.includes('hostname') || line.includes('"pid"'), 'bookkeeping fields stay out');
    }
  }
});

test('a readable error is one line: type, message and the frame it came from, not the whole stack', (t) => {
  const err = new TypeError('boom');
  const line = prettyLine(JSON.stringify({ level: 50, time: 0, msg: 'claim pass failed', err: { type: 'TypeError', message: err.message, stack: err.stack } }));
  t.false(line.includes('\n'));
  t.regex(line, /^00:00:00\.000 ERROR claim pass failed err=TypeError: boom \(.*log-format\.test\.ts:\d+:\d+\)\)$/);
});

test('request lines: method, route, status and time with the request id in the readable format; no header dump in either format', async (t) => {
  const pretty = sink(true);
  const json = new PassThrough();
  const jsonLines: string[] = [];
  json.on('data', (chunk) => jsonLines.push(...String(chunk).split('\n').filter(Boolean)));
  for (const [stream, format] of [
    [pretty.stream, 'auto'],
    [json, 'json'],
  ] as const) {
    const s = await startTestServer({ logger: createLogger('info', logDestination(format, stream)) });
    try {
      const { token } = await bootstrapAdmin(s.server);
      const me = await s.server.inject({
        method: 'GET',
        url: '/auth/me',
        headers: { authorization: `Bearer ${token}`, 'user-agent': 'svc-test', accept: 'application/json', 'x-custom': 'noise' },
      });
      t.is(me.statusCode, 200);
    } finally {
      await s.stop();
    }
  }
  const line = pretty.lines.find((l) => l.includes('/auth/me'));
  t.truthy(line, pretty.lines.join('\n'));
  t.regex(line!.replace(/\u001b\[\d+m/g, ''), /GET \/auth\/me → 200 in \d+ ms .*req=\S+/);
  t.false(/authorization|user-agent|x-custom|accept/.test(line!), line);

  const record = jsonLines.map((l) => JSON.parse(l)).find((r) => r.req?.url === '/auth/me');
  t.truthy(record);
  t.deepEqual(Object.keys(record.req.headers).sort(), ['authorization', 'user-agent'], 'only what says who asked: no accept, host or custom header');
  t.is(record.req.headers.authorization, '[redacted]');
});
