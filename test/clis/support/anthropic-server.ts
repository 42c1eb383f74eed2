/**
 * A scripted Anthropic Messages server on loopback for the real Claude Code CLI: `POST /v1/messages`
 * streamed (SSE: message_start, content_block_start/delta/stop with text_delta and input_json_delta,
 * message_delta with the usage, message_stop) and not, `POST /v1/messages/count_tokens`, and the
 * `HEAD /` preflight. A script is a list of turns, answered in order to the requests that offer
 * tools; side calls (no tools: titles, summaries, checks) get a short plain answer and leave the
 * script where it is. Every request is recorded, and every answer reports fixed usage, so a test
 * can compare the receipt with exactly what the "provider" said.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Block = { type: 'text'; text: string } | { type: 'tool_use'; name: string; input: Record<string, unknown> };

/** One scripted answer: its content blocks, or a function of the request (to read its tools or the tool results). */
export type Turn = Block[] | ((body: any) => Block[]);

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}

export interface Recorded {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
  /** Whether the request offered tools (a scripted turn), else a side call. */
  scripted: boolean;
  /** The usage this server reported for it (none for HEAD and count_tokens). */
  usage?: Usage;
}

/** The usage of scripted turn n (1-based), and of every side call: fixed, distinct numbers. */
export const turnUsage = (n: number): Usage => ({
  input_tokens: 1000 * n + 11,
  output_tokens: 50 * n + 7,
  cache_read_input_tokens: 300,
  cache_creation_input_tokens: 40,
});
export const SIDE_USAGE: Usage = { input_tokens: 21, output_tokens: 3, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };

/** Tokens as a budget counts them (hints.max_tokens): everything read or written. */
export const usageTokens = (u: Usage): number => u.input_tokens + u.output_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;

export class AnthropicServer {
  readonly requests: Recorded[] = [];
  url = '';
  private server?: Server;
  private next = 0;
  /** Set by `hold()`: scripted requests wait for it (a CLI that stays busy, to be cancelled). */
  private held: Promise<void> | null = null;
  private release: (() => void) | null = null;

  /** Set by `reachTokens`: from which request on, and to how many tokens. */
  private reach: { from: number; total: number } | null = null;

  constructor(private script: Turn[] = []) {}

  /**
   * The next scripted turn reports usage that brings the tokens this server reports from now on
   * (side calls included) to exactly `total` (its input padded): a job whose hints.max_tokens is
   * `total` reaches its budget with that turn. Later turns report their usual usage.
   */
  reachTokens(total: number): void {
    this.reach = { from: this.requests.length, total };
  }

  /** Replaces the script (and starts it from its first turn). */
  use(script: Turn[]): void {
    this.script = script;
    this.next = 0;
  }

  /** Scripted requests get no answer until `letGo()`. */
  hold(): void {
    this.held = new Promise((resolve) => (this.release = resolve));
  }

  letGo(): void {
    this.release?.();
    this.held = null;
  }

  get scripted(): Recorded[] {
    return this.requests.filter((r) => r.scripted);
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res).catch(() => res.destroy()));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.letGo();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: any = null;
    try {
      body = raw ? JSON.parse(raw) : null;
    } catch {
      body = raw;
    }
    const url = new URL(req.url ?? '/', 'http://x');
    const scripted = req.method === 'POST' && url.pathname === '/v1/messages' && Array.isArray(body?.tools) && body.tools.length > 0;
    const record: Recorded = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, scripted };
    this.requests.push(record);
    if (req.method === 'HEAD' || req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(req.method === 'GET' ? '{}' : undefined);
      return;
    }
    if (url.pathname === '/v1/messages/count_tokens') return json(res, 200, { input_tokens: 100 });
    if (url.pathname !== '/v1/messages') return json(res, 404, { type: 'error', error: { type: 'not_found_error', message: `no route ${url.pathname}` } });
    let blocks: Block[];
    let usage: Usage;
    if (scripted) {
      const turn = this.script[this.next];
      if (!turn) return json(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: `the script has no turn ${this.next + 1}` } });
      this.next += 1;
      usage = turnUsage(this.next);
      if (this.reach) {
        const before = this.requests.slice(this.reach.from).reduce((sum, r) => sum + (r.usage ? usageTokens(r.usage) : 0), 0);
        const pad = this.reach.total - before - usageTokens(usage);
        if (usage.input_tokens + pad < 1)
          return json(res, 400, {
            type: 'error',
            error: { type: 'invalid_request_error', message: `reachTokens(${this.reach.total}): ${before} tokens reported already` },
          });
        usage = { ...usage, input_tokens: usage.input_tokens + pad };
        this.reach = null;
      }
      try {
        blocks = typeof turn === 'function' ? turn(body) : turn;
      } catch (err) {
        return json(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: (err as Error).message } });
      }
      if (this.held) await this.held;
    } else {
      usage = SIDE_USAGE;
      blocks = [{ type: 'text', text: 'Side answer' }];
    }
    record.usage = usage;
    const model = String(body?.model ?? 'unknown');
    const stop = blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn';
    const id = `msg_${this.requests.length}`;
    const content = blocks.map((b, i) => (b.type === 'text' ? b : { ...b, id: `toolu_${this.requests.length}_${i}` }));
    if (!body?.stream) {
      return json(res, 200, { id, type: 'message', role: 'assistant', model, content, stop_reason: stop, stop_sequence: null, usage });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const send = (event: string, data: unknown) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    send('message_start', {
      type: 'message_start',
      message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } },
    });
    content.forEach((b, index) => {
      if (b.type === 'text') {
        send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
        for (const piece of split(b.text)) send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
      } else {
        const { input, ...start } = b as Extract<Block, { type: 'tool_use' }> & { id: string };
        send('content_block_start', { type: 'content_block_start', index, content_block: { ...start, input: {} } });
        for (const piece of split(JSON.stringify(input)))
          send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } });
      }
      send('content_block_stop', { type: 'content_block_stop', index });
    });
    send('message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage });
    send('message_stop', { type: 'message_stop' });
    res.end();
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** A string in three pieces (as a real stream splits it). */
function split(s: string): string[] {
  const a = Math.floor(s.length / 3);
  return [s.slice(0, a), s.slice(a, 2 * a), s.slice(2 * a)].filter((p) => p.length > 0);
}

/** The tool of the request whose name is `name` (any case), so a script uses the CLI's own spelling; throws when it offers none. */
export function toolNamed(body: any, name: string): string {
  const tool = (body?.tools ?? []).find((t: any) => String(t.name).toLowerCase() === name.toLowerCase());
  if (!tool) throw new Error(`the request offers no tool ${name}: ${(body?.tools ?? []).map((t: any) => t.name).join(', ')}`);
  return tool.name;
}

/** The final text of a job: a summary and the ```json-result block svc reads. */
export const resultText = (summary: string) => `Done.\n\n\`\`\`json-result\n${JSON.stringify({ svc: { status: 'success', summary } })}\n\`\`\`\n`;
