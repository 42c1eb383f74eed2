import { Writable } from 'node:stream';

const LEVELS: Record<number, { name: string; color: number }> = {
  10: { name: 'TRACE', color: 90 },
  20: { name: 'DEBUG', color: 36 },
  30: { name: 'INFO', color: 32 },
  40: { name: 'WARN', color: 33 },
  50: { name: 'ERROR', color: 31 },
  60: { name: 'FATAL', color: 35 },
};
/** What every line carries, or what the line says in its own words. */
const SHOWN_APART = new Set(['level', 'time', 'pid', 'hostname', 'service', 'msg', 'req', 'res', 'responseTime', 'err']);

function clock(time: unknown): string {
  const d = new Date(typeof time === 'number' ? time : Date.now());
  return d.toISOString().slice(11, 23);
}

function valueText(value: unknown): string {
  if (typeof value === 'string') return /[\s"=]/.test(value) || value === '' ? JSON.stringify(value) : value;
  return JSON.stringify(value) ?? String(value);
}

/** An error as `Type: message (first frame)`: enough to find it, without a screen of stack. */
function errorText(err: unknown): string {
  if (typeof err !== 'object' || err === null) return valueText(err);
  const { type, message, stack } = err as { type?: string; message?: string; stack?: string };
  const frame = stack
    ?.split('\n')
    .find((l) => l.trim().startsWith('at '))
    ?.trim()
    .replace(/^at /, '');
  return `${type ?? 'Error'}: ${message ?? ''}${frame ? ` (${frame})` : ''}`;
}

/**
 * One pino JSON record as one readable line: time, level, message, then the other fields as
 * key=value. A request line reads `GET /jobs/{id} → 200 in 12 ms` with its request id; headers
 * and the like stay in the JSON format.
 */
export function prettyLine(json: string, color = false): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json; // not ours: passed as it came
  }
  const level = LEVELS[Number(record.level)] ?? { name: String(record.level), color: 0 };
  const paint = (code: number, text: string) => (color && code ? `\u001b[${code}m${text}\u001b[0m` : text);
  const parts = [paint(90, clock(record.time)), paint(level.color, level.name.padEnd(5))];
  const req = record.req as { id?: string; method?: string; url?: string } | undefined;
  const res = record.res as { statusCode?: number } | undefined;
  if (req?.method && res) {
    const ms = typeof record.responseTime === 'number' ? ` in ${Math.round(record.responseTime)} ms` : '';
    parts.push(`${req.method.toUpperCase()} ${req.url} → ${res.statusCode}${ms}`);
    if (req.id) parts.push(paint(90, `req=${req.id}`));
  } else if (record.msg !== undefined) parts.push(String(record.msg));
  for (const [key, value] of Object.entries(record)) {
    if (SHOWN_APART.has(key) || value === undefined) continue;
    parts.push(`${paint(90, `${key}=`)}${valueText(value)}`);
  }
  if (record.err !== undefined) parts.push(paint(31, `err=${errorText(record.err)}`));
  return parts.join(' ');
}

/** A destination that writes pino's records to `out` as readable lines (one per record). */
export function prettyStream(out: NodeJS.WritableStream = process.stdout, color = Boolean((out as { isTTY?: boolean }).isTTY)): Writable {
  let partial = '';
  return new Writable({
    write(chunk, _encoding, done) {
      const lines = (partial + String(chunk)).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line) out.write(`${prettyLine(line, color)}\n`);
      done();
    },
  });
}
