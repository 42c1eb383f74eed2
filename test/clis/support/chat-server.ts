/**
 * A scripted OpenAI chat completions server on loopback (`POST /v1/chat/completions`, streamed as
 * SSE `chat.completion.chunk`s ending in `data: [DONE]`, or one `chat.completion`; `GET /v1/models`)
 * for CLIs that speak it (opencode through an OpenAI-compatible provider). A script is a list of
 * turns, answered in order to the requests that offer tools; side calls (no tools: titles,
 * summaries) get a short plain answer and leave the script where it is. Every request is recorded;
 * every answer reports fixed usage (in a last chunk when the request asks with
 * `stream_options.include_usage`), so a test can compare the receipt with what the server said.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Reply = { text?: string; toolCalls?: { name: string; arguments: Record<string, unknown> }[] };
export type ChatTurn = Reply | ((body: any) => Reply);

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  completion_tokens_details: { reasoning_tokens: number };
}

export interface ChatRecorded {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
  scripted: boolean;
  usage?: ChatUsage;
}

const usageOf = (prompt: number, completion: number, cached: number): ChatUsage => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
  prompt_tokens_details: { cached_tokens: cached },
  completion_tokens_details: { reasoning_tokens: 0 },
});
/** Scripted turn n (1-based), and every side call: fixed, distinct numbers. */
export const chatTurnUsage = (n: number): ChatUsage => usageOf(1200 * n + 13, 60 * n + 9, 200 * n);
export const CHAT_SIDE_USAGE: ChatUsage = usageOf(31, 5, 0);

/** Tokens as a budget counts them (hints.max_tokens): the prompt (cached included) and the completion. */
export const chatTokens = (u: ChatUsage): number => u.prompt_tokens + u.completion_tokens;

export class ChatServer {
  readonly requests: ChatRecorded[] = [];
  url = '';
  private server?: Server;
  private next = 0;
  private held: Promise<void> | null = null;
  private release: (() => void) | null = null;
  /** Set by `reachTokens`: from which request on, and to how many tokens. */
  private reach: { from: number; total: number } | null = null;

  constructor(private script: ChatTurn[] = []) {}

  /**
   * The next scripted turn reports usage that brings the tokens this server reports from now on
   * (side calls included) to exactly `total` (its prompt padded): a job whose hints.max_tokens is
   * `total` reaches its budget with that turn.
   */
  reachTokens(total: number): void {
    this.reach = { from: this.requests.length, total };
  }

  use(script: ChatTurn[]): void {
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
    const scripted = req.method === 'POST' && url.pathname.endsWith('/chat/completions') && Array.isArray(body?.tools) && body.tools.length > 0;
    const record: ChatRecorded = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, scripted };
    this.requests.push(record);
    if (req.method === 'GET' && url.pathname.endsWith('/models')) return json(res, 200, { object: 'list', data: [] });
    if (req.method !== 'POST' || !url.pathname.endsWith('/chat/completions')) return json(res, 404, { error: { message: `no route ${url.pathname}` } });
    let reply: Reply;
    let usage: ChatUsage;
    if (scripted) {
      const turn = this.script[this.next];
      if (!turn) return json(res, 400, { error: { message: `the script has no turn ${this.next + 1}`, type: 'invalid_request_error' } });
      this.next += 1;
      usage = chatTurnUsage(this.next);
      if (this.reach) {
        const before = this.requests.slice(this.reach.from).reduce((sum, r) => sum + (r.usage ? chatTokens(r.usage) : 0), 0);
        const pad = this.reach.total - before - chatTokens(usage);
        if (usage.prompt_tokens + pad <= usage.prompt_tokens_details.cached_tokens)
          return json(res, 400, { error: { message: `reachTokens(${this.reach.total}): ${before} tokens reported already`, type: 'invalid_request_error' } });
        usage = { ...usage, prompt_tokens: usage.prompt_tokens + pad, total_tokens: usage.total_tokens + pad };
        this.reach = null;
      }
      try {
        reply = typeof turn === 'function' ? turn(body) : turn;
      } catch (err) {
        return json(res, 400, { error: { message: (err as Error).message, type: 'invalid_request_error' } });
      }
      if (this.held) await this.held;
    } else {
      usage = CHAT_SIDE_USAGE;
      reply = { text: 'Side answer' };
    }
    record.usage = usage;
    const id = `chatcmpl-${this.requests.length}`;
    const model = String(body?.model ?? 'unknown');
    const created = Math.floor(Date.now() / 1000);
    const calls = (reply.toolCalls ?? []).map((c, i) => ({
      id: `call_${this.requests.length}_${i}`,
      type: 'function',
      function: { name: c.name, arguments: JSON.stringify(c.arguments) },
    }));
    const finish = calls.length ? 'tool_calls' : 'stop';
    if (!body?.stream) {
      return json(res, 200, {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [
          { index: 0, message: { role: 'assistant', content: reply.text ?? null, ...(calls.length ? { tool_calls: calls } : {}) }, finish_reason: finish },
        ],
        usage,
      });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const chunk = (delta: Record<string, unknown>, finish_reason: string | null = null) =>
      res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason }] })}\n\n`);
    chunk({ role: 'assistant', content: '' });
    for (const piece of split(reply.text ?? '')) chunk({ content: piece });
    calls.forEach((c, index) => {
      chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } }] });
      for (const piece of split(c.function.arguments)) chunk({ tool_calls: [{ index, function: { arguments: piece } }] });
    });
    chunk({}, finish);
    if (body?.stream_options?.include_usage)
      res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`);
    res.write('data: [DONE]\n\n');
    res.end();
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function split(s: string): string[] {
  const a = Math.floor(s.length / 3);
  return [s.slice(0, a), s.slice(a, 2 * a), s.slice(2 * a)].filter((p) => p.length > 0);
}

/** The function tool of the request whose name is `name` (any case); throws when it offers none. */
export function functionNamed(body: any, name: string): string {
  const names: string[] = (body?.tools ?? []).map((t: any) => String(t.function?.name ?? t.name));
  const found = names.find((n) => n.toLowerCase() === name.toLowerCase());
  if (!found) throw new Error(`the request offers no tool ${name}: ${names.join(', ')}`);
  return found;
}
