/**
 * A scripted model server on loopback speaking the Gemini API as Gemini CLI uses it:
 * `POST /v1beta/models/<model>:generateContent` (one JSON answer) and
 * `:streamGenerateContent?alt=sse` (server-sent events, one GenerateContentResponse each), key in
 * `x-goog-api-key`. Answers carry `functionCall` parts and `usageMetadata`.
 *
 * The script is a list of turns. Which turn a request gets follows from the conversation it carries
 * (the number of functionResponse parts in its contents), so a retried request gets the same answer.
 * Side calls (the router's classifier, summaries, next-speaker checks: requests that offer no tools)
 * get a short answer without consuming the script; one that asks for JSON gets JSON of its schema.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type GeminiTurn = { writeFile: { path: string; content: string } } | { text: string } | { hang: true };

export interface GeminiRequest {
  method: string;
  url: string;
  /** The model the path names. */
  model: string;
  stream: boolean;
  headers: IncomingMessage['headers'];
  body: any;
  turn: number | null;
  tool?: string;
  error?: string;
}

/** Fixed per-response usage: prompt tokens include the cached ones, thoughts are apart from candidates. */
export const GEMINI_USAGE = { prompt: 900, cached: 300, candidates: 40, thoughts: 15 };

export interface GeminiServer {
  /** The base URL (GOOGLE_GEMINI_BASE_URL). */
  url: string;
  requests: GeminiRequest[];
  turns(): GeminiRequest[];
  stop(): Promise<void>;
}

/** Every function the request declares, by name, with its parameter schema. */
export function declaredFunctions(body: any): Map<string, any> {
  const out = new Map<string, any>();
  for (const tool of Array.isArray(body?.tools) ? body.tools : [])
    for (const f of Array.isArray(tool?.functionDeclarations) ? tool.functionDeclarations : []) if (typeof f?.name === 'string') out.set(f.name, f);
  return out;
}

function usageMetadata() {
  const u = GEMINI_USAGE;
  return {
    promptTokenCount: u.prompt,
    cachedContentTokenCount: u.cached,
    candidatesTokenCount: u.candidates,
    thoughtsTokenCount: u.thoughts,
    totalTokenCount: u.prompt + u.candidates + u.thoughts,
  };
}

/** A value the JSON schema accepts (what a side call asking for JSON, like the router's classifier, gets). */
export function sampleOf(schema: any): unknown {
  if (Array.isArray(schema?.enum) && schema.enum.length) return schema.enum[0];
  switch (String(schema?.type ?? 'object').toLowerCase()) {
    case 'object':
      return Object.fromEntries(Object.entries(schema?.properties ?? {}).map(([k, v]) => [k, sampleOf(v)]));
    case 'array':
      return [];
    case 'string':
      return 'simple';
    case 'integer':
    case 'number':
      return 10;
    case 'boolean':
      return false;
    default:
      return null;
  }
}

/**
 * write_file's arguments, named after its declared schema (file_path or path, content). A request
 * that declares no write_file (plan mode) still gets the call, as a model may try it: the CLI must refuse.
 */
function writeArgs(decl: any, path: string, content: string): Record<string, string> {
  if (!decl) return { file_path: path, content };
  const props = decl.parametersJsonSchema?.properties ?? decl.parameters?.properties ?? {};
  const pathKey = ['file_path', 'absolute_path', 'path'].find((k) => k in props);
  if (!pathKey || !('content' in props)) throw new Error(`write_file has no path and content parameters: ${JSON.stringify(props)}`);
  return { [pathKey]: path, content };
}

const responseOf = (parts: unknown[], model: string) => ({
  candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
  usageMetadata: usageMetadata(),
  modelVersion: model,
  responseId: `resp-${Date.now().toString(36)}`,
});

export async function startGeminiServer(script: GeminiTurn[] | ((bodyText: string) => GeminiTurn[]), opts: { apiKey: string }): Promise<GeminiServer> {
  const requests: GeminiRequest[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: any = null;
      try {
        body = JSON.parse(raw);
      } catch {
        /* recorded as null */
      }
      const url = new URL(req.url ?? '/', 'http://x');
      const m = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(url.pathname);
      const record: GeminiRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        model: m?.[1] ?? '',
        stream: m?.[2] === 'streamGenerateContent',
        headers: req.headers,
        body,
        turn: null,
      };
      requests.push(record);
      const json = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (req.headers['x-goog-api-key'] !== opts.apiKey)
        return json(400, { error: { code: 400, message: 'API key not valid. Please pass a valid API key.', status: 'INVALID_ARGUMENT' } });
      if (req.method !== 'POST' || !m || !body) return json(404, { error: { code: 404, message: `no route ${req.method} ${req.url}`, status: 'NOT_FOUND' } });

      const functions = declaredFunctions(body);
      let turn: GeminiTurn;
      if (functions.size === 0) {
        // A side call: JSON when it asks for JSON (the router's classifier), else a word.
        const config = body.generationConfig ?? {};
        turn = { text: config.responseMimeType === 'application/json' ? JSON.stringify(sampleOf(config.responseJsonSchema ?? config.responseSchema)) : 'ok' };
      } else {
        const contents: any[] = Array.isArray(body.contents) ? body.contents : [];
        const index = contents.flatMap((c) => (Array.isArray(c?.parts) ? c.parts : [])).filter((p: any) => p?.functionResponse).length;
        record.turn = index;
        const turns = typeof script === 'function' ? script(raw) : script;
        turn = turns[Math.min(index, turns.length - 1)];
      }
      let parts: unknown[];
      try {
        if ('writeFile' in turn) {
          const decl = functions.get('write_file');
          record.tool = 'write_file';
          parts = [{ functionCall: { name: 'write_file', args: writeArgs(decl, turn.writeFile.path, turn.writeFile.content) } }];
        } else if ('text' in turn) {
          parts = [{ text: turn.text }];
        } else {
          parts = [];
        }
      } catch (err) {
        record.error = (err as Error).message;
        return json(500, { error: { code: 500, message: record.error, status: 'INTERNAL' } });
      }
      if (!record.stream) {
        if ('hang' in turn) return; // no answer until stop()
        return json(200, responseOf(parts, record.model));
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      if ('hang' in turn) return;
      // Text in pieces cut mid-line, as a real stream; the usage and finishReason on the last chunk.
      const pieces: unknown[][] = 'text' in turn ? (turn.text.match(/[\s\S]{1,23}/g) ?? ['']).map((t) => [{ text: t }]) : [parts];
      pieces.forEach((p, i) => {
        const chunk = responseOf(p, record.model) as any;
        if (i < pieces.length - 1) {
          delete chunk.candidates[0].finishReason;
          delete chunk.usageMetadata;
        }
        res.write(`data: ${JSON.stringify(chunk)}\r\n\r\n`);
      });
      res.end();
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    turns: () => requests.filter((r) => r.turn !== null),
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
