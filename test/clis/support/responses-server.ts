/**
 * A scripted model server on loopback speaking the OpenAI Responses API as Codex CLI uses it:
 * `POST <base>/responses` answered as server-sent events, exactly the event sequence of the real API
 * (response.created, response.in_progress, output_item.added/done, content_part.added/done,
 * output_text.delta/done, function_call_arguments.delta/done or custom_tool_call_input.delta/done,
 * response.completed with usage). The WebSocket upgrade Codex tries first on `/responses` is refused
 * with 426, and counted, so the CLI falls back to HTTP.
 *
 * The script is a list of turns. Which turn a request gets follows from the conversation it carries
 * (the number of tool outputs in its input), so a retried request gets the same answer and side
 * calls (titles, summaries: requests that offer no tools) get a short answer without consuming it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Socket } from 'node:net';

export type Turn =
  /** A tool call that creates `path` with `content`, with the tool the request offers for it. */
  | { writeFile: { path: string; content: string } }
  /** A final answer. */
  | { text: string }
  /** Headers, then nothing until the server stops (a model that is still thinking). */
  | { hang: true };

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: any;
  /** The script turn it was answered with; null for a side call. */
  turn: number | null;
  /** The tool the answer called, when it called one. */
  tool?: string;
  /** Why the server could not answer it. */
  error?: string;
  /** The usage its answer reported. */
  usage?: ResponsesUsage;
}

export interface ResponsesUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/** Tokens as a budget counts them (hints.max_tokens): input (cached included) and output (reasoning included). */
export const responsesTokens = (u: ResponsesUsage): number => u.input_tokens + u.output_tokens;

/** Fixed per-response usage, so receipts can be checked exactly. */
export const RESPONSES_USAGE = { input: 1000, cached: 200, output: 50, reasoning: 20 };

export interface ResponsesServer {
  /** The base URL to configure (ends in /v1). */
  base: string;
  requests: RecordedRequest[];
  /** WebSocket upgrade attempts, refused. */
  websocketAttempts: number;
  /** Requests answered with a script turn (retries included). */
  turns(): RecordedRequest[];
  /**
   * The next scripted turn reports usage that brings the tokens this server reports from now on
   * (side calls included) to exactly `total` (its input padded): a job whose hints.max_tokens is
   * `total` reaches its budget with that turn.
   */
  reachTokens(total: number): void;
  stop(): Promise<void>;
}

/** Every tool a request offers: `tools`, and tool lists carried in its input (Codex's additional_tools), namespaces flattened. */
export interface OfferedTool {
  type: string;
  name: string;
  namespace?: string;
  description?: string;
  parameters?: any;
}

export function offeredTools(body: any): OfferedTool[] {
  const out: OfferedTool[] = [];
  const walk = (tools: unknown, namespace?: string) => {
    if (!Array.isArray(tools)) return;
    for (const t of tools) {
      if (!t || typeof t !== 'object') continue;
      if (t.type === 'namespace') walk(t.tools, t.name);
      else if (typeof t.name === 'string') out.push({ type: t.type, name: t.name, namespace, description: t.description, parameters: t.parameters });
    }
  };
  walk(body?.tools);
  for (const item of Array.isArray(body?.input) ? body.input : []) if (item?.type === 'additional_tools') walk(item.tools);
  return out;
}

const OUTPUT_TYPES = new Set(['function_call_output', 'custom_tool_call_output', 'local_shell_call_output', 'tool_search_output']);

function patchFor(path: string, content: string): string {
  return [
    '*** Begin Patch',
    `*** Add File: ${path}`,
    ...content
      .replace(/\n$/, '')
      .split('\n')
      .map((l) => `+${l}`),
    '*** End Patch',
    '',
  ].join('\n');
}

const SHELL_TOOLS = ['exec_command', 'shell_command', 'shell'];
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The arguments of a shell tool running `script`, after the tool's own schema. */
function shellArguments(tool: OfferedTool, script: string): Record<string, unknown> {
  const props = tool.parameters?.properties ?? {};
  if (props.cmd) return { cmd: script };
  if (props.command?.type === 'array') return { command: ['bash', '-lc', script] };
  if (props.command) return { command: script };
  throw new Error(`shell tool ${tool.name} has neither cmd nor command: ${JSON.stringify(props)}`);
}

/**
 * The call that writes the file, with the tool this request offers: apply_patch (a freeform custom
 * tool or a function taking {input}); in code mode (`exec`, a custom tool running JavaScript with
 * the other tools on `tools`) the same patch through `tools.apply_patch`; else the shell tool
 * (`exec_command`, what Codex offers a model it has no metadata for) with printf.
 */
function writeCall(body: any, path: string, content: string): { kind: 'custom' | 'function'; name: string; namespace?: string; input: string } {
  const tools = offeredTools(body);
  const patch = patchFor(path, content);
  const direct = tools.find((t) => t.name === 'apply_patch');
  if (direct)
    return direct.type === 'custom'
      ? { kind: 'custom', name: direct.name, input: patch }
      : { kind: 'function', name: direct.name, input: JSON.stringify({ input: patch }) };
  const exec = tools.find((t) => t.name === 'exec' && t.type === 'custom' && /\bapply_patch\(/.test(t.description ?? ''));
  if (exec)
    return { kind: 'custom', name: 'exec', namespace: exec.namespace, input: `const r = await tools.apply_patch(${JSON.stringify(patch)});\ntext(r);\n` };
  const shell = SHELL_TOOLS.map((name) => tools.find((t) => t.name === name && t.type === 'function')).find(Boolean);
  if (shell) {
    const script = `printf '%s' ${quote(content)} > ${quote(path)}`;
    return { kind: 'function', name: shell.name, namespace: shell.namespace, input: JSON.stringify(shellArguments(shell, script)) };
  }
  throw new Error(`the request offers no tool that writes files: ${tools.map((t) => t.name).join(', ')}`);
}

let ids = 0;
const id = (prefix: string) => `${prefix}_${Date.now().toString(16)}${(++ids).toString(16).padStart(6, '0')}`;

function usageOf(): ResponsesUsage {
  const u = RESPONSES_USAGE;
  return {
    input_tokens: u.input,
    input_tokens_details: { cached_tokens: u.cached },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: u.reasoning },
    total_tokens: u.input + u.output,
  };
}

class Sse {
  private seq = 0;
  constructor(private readonly res: ServerResponse) {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  }
  send(type: string, data: Record<string, unknown>): void {
    this.res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.seq++, ...data })}\n\n`);
  }
}

function respond(res: ServerResponse, body: any, turn: Turn, record: RecordedRequest, usage: ResponsesUsage = usageOf()): void {
  // Chosen before the headers go out, so a request without a usable tool is a plain 500.
  const call = 'writeFile' in turn ? writeCall(body, turn.writeFile.path, turn.writeFile.content) : null;
  const sse = new Sse(res);
  const response = {
    id: id('resp'),
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'in_progress',
    model: body.model,
    output: [] as unknown[],
    usage: null as unknown,
  };
  sse.send('response.created', { response });
  sse.send('response.in_progress', { response });
  if ('hang' in turn) return; // the socket stays open until stop()
  if (call) {
    record.tool = call.name;
    const callId = id('call');
    const itemId = id(call.kind === 'custom' ? 'ctc' : 'fc');
    const base =
      call.kind === 'custom'
        ? { type: 'custom_tool_call', id: itemId, call_id: callId, name: call.name }
        : { type: 'function_call', id: itemId, call_id: callId, name: call.name };
    const withNamespace = call.namespace ? { ...base, namespace: call.namespace } : base;
    const field = call.kind === 'custom' ? 'input' : 'arguments';
    const deltaEvent = call.kind === 'custom' ? 'response.custom_tool_call_input.delta' : 'response.function_call_arguments.delta';
    const doneEvent = call.kind === 'custom' ? 'response.custom_tool_call_input.done' : 'response.function_call_arguments.done';
    sse.send('response.output_item.added', { output_index: 0, item: { ...withNamespace, [field]: '', status: 'in_progress' } });
    const half = Math.floor(call.input.length / 2);
    for (const delta of [call.input.slice(0, half), call.input.slice(half)]) sse.send(deltaEvent, { item_id: itemId, output_index: 0, delta });
    sse.send(doneEvent, { item_id: itemId, output_index: 0, [field]: call.input });
    const item = { ...withNamespace, [field]: call.input, status: 'completed' };
    sse.send('response.output_item.done', { output_index: 0, item });
    response.output = [item];
  } else {
    const itemId = id('msg');
    const text = 'text' in turn ? turn.text : '';
    sse.send('response.output_item.added', { output_index: 0, item: { id: itemId, type: 'message', status: 'in_progress', role: 'assistant', content: [] } });
    sse.send('response.content_part.added', { item_id: itemId, output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
    // Deltas cut mid-line, as a real stream does.
    for (let i = 0; i < text.length; i += 17)
      sse.send('response.output_text.delta', { item_id: itemId, output_index: 0, content_index: 0, delta: text.slice(i, i + 17), logprobs: [] });
    sse.send('response.output_text.done', { item_id: itemId, output_index: 0, content_index: 0, text, logprobs: [] });
    const part = { type: 'output_text', text, annotations: [] };
    sse.send('response.content_part.done', { item_id: itemId, output_index: 0, content_index: 0, part });
    const item = { id: itemId, type: 'message', status: 'completed', role: 'assistant', content: [part] };
    sse.send('response.output_item.done', { output_index: 0, item });
    response.output = [item];
  }
  record.usage = usage;
  sse.send('response.completed', { response: { ...response, status: 'completed', usage } });
  res.end();
}

/** `script`: the turns, or a choice of them by the request body's text (a marker in the prompt). */
export async function startResponsesServer(script: Turn[] | ((bodyText: string) => Turn[]), opts: { apiKey: string }): Promise<ResponsesServer> {
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  let websocketAttempts = 0;
  let reach: { from: number; total: number } | null = null;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: any = null;
      const raw = Buffer.concat(chunks).toString('utf8');
      try {
        body = JSON.parse(raw);
      } catch {
        /* recorded as null */
      }
      const record: RecordedRequest = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, turn: null };
      requests.push(record);
      if (req.headers.authorization !== `Bearer ${opts.apiKey}`) {
        res.writeHead(401, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } }));
      }
      if (req.method !== 'POST' || !/\/responses$/.test(new URL(req.url ?? '/', 'http://x').pathname) || !body) {
        res.writeHead(404, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
      }
      const side = offeredTools(body).length === 0;
      if (side) return respond(res, body, { text: 'ok' }, record);
      const index = (Array.isArray(body.input) ? body.input : []).filter((i: any) => OUTPUT_TYPES.has(i?.type)).length;
      record.turn = index;
      const turns = typeof script === 'function' ? script(raw) : script;
      const turn = turns[Math.min(index, turns.length - 1)];
      let usage = usageOf();
      if (reach) {
        const before = requests.slice(reach.from).reduce((sum, r) => sum + (r.usage ? responsesTokens(r.usage) : 0), 0);
        const pad = reach.total - before - responsesTokens(usage);
        if (usage.input_tokens + pad <= usage.input_tokens_details.cached_tokens) {
          record.error = `reachTokens(${reach.total}): ${before} tokens reported already`;
          res.writeHead(400, { 'content-type': 'application/json' });
          return res.end(JSON.stringify({ error: { message: record.error } }));
        }
        usage = { ...usage, input_tokens: usage.input_tokens + pad, total_tokens: usage.total_tokens + pad };
        reach = null;
      }
      try {
        respond(res, body, turn, record, usage);
      } catch (err) {
        record.error = (err as Error).message;
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: (err as Error).message } }));
      }
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('upgrade', (_req, socket: Socket) => {
    websocketAttempts++;
    socket.end('HTTP/1.1 426 Upgrade Required\r\ncontent-type: text/plain\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    base: `http://127.0.0.1:${port}/v1`,
    requests,
    get websocketAttempts() {
      return websocketAttempts;
    },
    turns: () => requests.filter((r) => r.turn !== null),
    reachTokens: (total: number) => {
      reach = { from: requests.length, total };
    },
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
