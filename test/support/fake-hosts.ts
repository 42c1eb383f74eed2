/**
 * Local HTTP servers that speak the parts of a code host's REST API and a chat app's Web API that
 * svc calls, with their real request and answer shapes (including their refusals). They record
 * every request so tests can check what svc sent.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface Recorded {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

export interface FakeHost {
  url: string;
  requests: Recorded[];
  /** Answer nothing for this long before handling (a host that hangs). */
  delayMs: number;
  close(): Promise<void>;
}

type Handler = (req: Recorded) => { status: number; body: unknown; headers?: Record<string, string> };

async function serve(handler: Handler): Promise<FakeHost> {
  const requests: Recorded[] = [];
  const sockets = new Set<Socket>();
  const fake = { requests, delayMs: 0 } as FakeHost;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        /* keep the text */
      }
      const recorded = { method: req.method!, path: req.url!, headers: req.headers, body };
      requests.push(recorded);
      setTimeout(() => {
        const answer = handler(recorded);
        res.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8', ...answer.headers });
        res.end(JSON.stringify(answer.body));
      }, fake.delayMs).unref();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () => {
    for (const s of sockets) s.destroy();
    return new Promise((resolve) => server.close(() => resolve()));
  };
  return fake;
}

export interface FakeCodeHostState {
  /** Tokens the host accepts. */
  tokens: Set<string>;
  /** `owner/name` → its branches. */
  repos: Map<string, Set<string>>;
  /** login → the public SSH keys `GET {api}/users/{login}/keys` lists (the host's 404 for anyone else). */
  users?: Map<string, string[]>;
}

/**
 * A code host's `POST {api}/repos/{owner}/{repo}/pulls` (the API root is `<url>/api/v3`, as on
 * an Enterprise Server): 401 for a bad token, 404 for an unknown repository, 422 Validation Failed
 * for missing fields, unknown branches, no commits between them, or an open pull request already there.
 */
export async function fakeCodeHost(state: FakeCodeHostState): Promise<FakeHost & { state: FakeCodeHostState }> {
  const open = new Map<string, number>();
  let number = 0;
  const invalid = (errors: Record<string, unknown>[]) => ({
    status: 422,
    body: { message: 'Validation Failed', errors, documentation_url: 'https://docs.code.example/rest/pulls/pulls#create-a-pull-request' },
  });
  const fake = await serve((req) => {
    const user = /^\/api\/v3\/users\/([^/]+)\/keys$/.exec(req.path);
    if (req.method === 'GET' && user) {
      const keys = state.users?.get(decodeURIComponent(user[1]));
      return keys ? { status: 200, body: keys.map((key, i) => ({ id: i + 1, key })) } : { status: 404, body: { message: 'Not Found' } };
    }
    const match = /^\/api\/v3\/repos\/([^/]+)\/([^/]+)\/pulls$/.exec(req.path);
    if (req.method !== 'POST' || !match) return { status: 404, body: { message: 'Not Found' } };
    const auth = /^(?:Bearer|token) (.+)$/.exec(req.headers.authorization ?? '');
    if (!auth || !state.tokens.has(auth[1])) return { status: 401, body: { message: 'Bad credentials', documentation_url: 'https://docs.code.example/rest' } };
    const repo = `${match[1]}/${match[2]}`;
    const branches = state.repos.get(repo);
    if (!branches) return { status: 404, body: { message: 'Not Found' } };
    const { title, head, base, body, draft } = (req.body ?? {}) as Record<string, string>;
    for (const [field, value] of Object.entries({ title, head, base })) {
      if (typeof value !== 'string' || !value) return invalid([{ resource: 'PullRequest', code: 'missing_field', field }]);
    }
    const headBranch = head.includes(':') ? head.split(':')[1] : head;
    if (!branches.has(headBranch)) return invalid([{ resource: 'PullRequest', field: 'head', code: 'invalid' }]);
    if (!branches.has(base)) return invalid([{ resource: 'PullRequest', field: 'base', code: 'invalid' }]);
    if (headBranch === base) return invalid([{ resource: 'PullRequest', code: 'custom', message: `No commits between ${base} and ${head}` }]);
    const key = `${repo}:${head}:${base}`;
    if (open.has(key)) return invalid([{ resource: 'PullRequest', code: 'custom', message: `A pull request already exists for ${match[1]}:${headBranch}.` }]);
    open.set(key, ++number);
    return {
      status: 201,
      body: {
        url: `${fake.url}/api/v3/repos/${repo}/pulls/${number}`,
        id: 100 + number,
        node_id: `PR_${number}`,
        number,
        html_url: `${fake.url}/${repo}/pull/${number}`,
        state: 'open',
        locked: false,
        title,
        body: body ?? null,
        draft: draft ?? false,
        head: { label: head, ref: headBranch },
        base: { label: `${match[1]}:${base}`, ref: base },
        user: { login: 'svc-bot' },
      },
    };
  });
  return Object.assign(fake, { state });
}

/**
 * A chat app's `POST <url>/api/chat.postMessage`: always HTTP 200 with `ok`, refusing with the
 * app's error codes (not_authed, invalid_auth, channel_not_found, no_text); 429 ratelimited when asked.
 */
export async function fakeChatApp(opts: { tokens: Set<string>; channels: Set<string> }): Promise<FakeHost & { rateLimited: boolean }> {
  let seq = 0;
  const fake = (await serve((req) => {
    if (req.method !== 'POST' || req.path !== '/api/chat.postMessage') return { status: 404, body: { ok: false, error: 'unknown_method' } };
    if (fake.rateLimited) return { status: 429, body: { ok: false, error: 'ratelimited' }, headers: { 'retry-after': '30' } };
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    if (!auth) return { status: 200, body: { ok: false, error: 'not_authed' } };
    if (!opts.tokens.has(auth[1])) return { status: 200, body: { ok: false, error: 'invalid_auth' } };
    const { channel, text, thread_ts } = (req.body ?? {}) as Record<string, string>;
    if (!opts.channels.has(channel)) return { status: 200, body: { ok: false, error: 'channel_not_found' } };
    if (!text) return { status: 200, body: { ok: false, error: 'no_text' } };
    const ts = `1718000000.${String(++seq).padStart(6, '0')}`;
    return { status: 200, body: { ok: true, channel, ts, message: { type: 'message', text, ts, bot_id: 'B0SVC001', ...(thread_ts ? { thread_ts } : {}) } } };
  })) as FakeHost & { rateLimited: boolean };
  fake.rateLimited = false;
  return fake;
}
