/**
 * Code-host port for GitHub-compatible hosts: webhook deliveries signed with `X-Hub-Signature-256`
 * and named by an event header, and the REST API's `POST /repos/{owner}/{repo}/pulls`.
 */
import Joi from 'joi';
import { hmacSha256Hex, sameSignature } from '../../../core/crypto/hmac.ts';
import { getJson, postJson } from '../../../core/http/outbound.ts';
import { HostApiError, headerOf, type InboundRequest, type Verification } from '../../../core/ports/integrations.ts';
import type { PullRequest, PullRequestInput, VcsDelivery, VcsHost } from '../../../core/ports/vcshost.ts';
import { defineAdapter } from '../../../core/sdk.ts';
import { pullRequestEvent, pullRequestReviewEvent, pushEvent } from './deliveries.ts';

type Options = {
  api_url: string;
  token: string | null;
  timeout_ms: number;
  event_header: string;
  delivery_header: string;
};

const SIGNATURE_HEADER = 'X-Hub-Signature-256';
const SIGNATURE = /^sha256=([0-9a-f]{64})$/i;
const DELIVERY_ID = /^[A-Za-z0-9._:-]{1,200}$/;
const LOGIN = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,99})$/;
const REPO = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;
const HEADER_NAME = Joi.string().pattern(/^[A-Za-z0-9-]+$/);

const optionsSchema = Joi.object({
  api_url: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .default('https://api.github.com')
    .description('REST API root: https://api.github.com, https://<host>/api/v3 (Enterprise Server) or https://<host>/api/v1 (Gitea, Forgejo).'),
  token: Joi.string().allow(null).default(null).description('Token for API calls whose caller brings none (SVC_ADAPTERS__VCSHOST__OPTIONS__TOKEN).'),
  timeout_ms: Joi.number().integer().min(100).default(30_000).description('How long an API call may take.'),
  event_header: HEADER_NAME.default('X-GitHub-Event').description('Header naming the kind of a webhook delivery (Gitea and Forgejo send it too).'),
  delivery_header: HEADER_NAME.default('X-GitHub-Delivery').description(
    'Header carrying the unique delivery id: the dedupe key of a redelivery, and of a pull_request event from a host that sends no updated_at (a push dedupes on the push itself: repository, ref, before, after; a pull_request on the event: repository, number, action, head sha, updated_at and the action detail).',
  ),
});

/** The host's own message for a refused call: `message` and the `errors` list of a 422. */
function hostMessage(body: unknown): string {
  const b = (body ?? {}) as { message?: unknown; errors?: { message?: string; code?: string }[] };
  const details = Array.isArray(b.errors) ? b.errors.map((e) => e?.message ?? e?.code).filter(Boolean) : [];
  const message = typeof b.message === 'string' ? b.message : typeof body === 'string' ? body.slice(0, 200) : 'no message';
  return details.length ? `${message}: ${details.join('; ')}` : message;
}

class HubHost implements VcsHost {
  readonly name = 'hub';

  constructor(private readonly options: Options) {}

  verify(request: InboundRequest, webhookSecret: string): Verification {
    const header = headerOf(request, SIGNATURE_HEADER);
    if (!header) return { ok: false, reason: `${SIGNATURE_HEADER} header is missing` };
    const match = SIGNATURE.exec(header.trim());
    if (!match) return { ok: false, reason: `${SIGNATURE_HEADER} must be sha256=<64 hex digits>` };
    if (!sameSignature(match[1].toLowerCase(), hmacSha256Hex(webhookSecret, request.body))) {
      return { ok: false, reason: `${SIGNATURE_HEADER} does not match the body signed with the project's webhook secret` };
    }
    return { ok: true };
  }

  normalize(request: InboundRequest): VcsDelivery {
    const kind = headerOf(request, this.options.event_header)?.trim();
    if (!kind) return { kind: 'invalid', message: `${this.options.event_header} header is missing` };
    const delivery = headerOf(request, this.options.delivery_header)?.trim();
    if (delivery !== undefined && !DELIVERY_ID.test(delivery)) return { kind: 'invalid', message: `${this.options.delivery_header} is not a delivery id` };
    if (kind !== 'push' && kind !== 'pull_request' && kind !== 'pull_request_review') return { kind: 'ignored', event: kind.slice(0, 100) };
    const body = parseBody(request);
    if (typeof body === 'string') return { kind: 'invalid', message: body };
    // Each dedupes on the event itself (a replay under a new delivery id is the same event): deliveries.ts.
    const event = kind === 'push' ? pushEvent(body) : kind === 'pull_request' ? pullRequestEvent(body, delivery ?? null) : pullRequestReviewEvent(body);
    return typeof event === 'string' ? { kind: 'invalid', message: event } : { kind: 'event', event };
  }

  async createPullRequest(input: PullRequestInput): Promise<PullRequest> {
    if (!REPO.test(input.repo)) throw new HostApiError(`repo '${input.repo}' is not owner/name`, 0);
    const token = input.token ?? this.options.token;
    if (!token) throw new HostApiError('no code-host token: pass one or set adapters.vcshost.options.token', 0);
    const { status, body } = await postJson({
      url: `${this.options.api_url.replace(/\/+$/, '')}/repos/${input.repo}/pulls`,
      headers: { authorization: `Bearer ${token}`, accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28', 'user-agent': 'svc' },
      body: { title: input.title, body: input.body ?? '', head: input.head, base: input.base, ...(input.draft ? { draft: true } : {}) },
      timeoutMs: this.options.timeout_ms,
    });
    const pr = body as { number?: unknown; html_url?: unknown; state?: unknown } | null;
    if (status !== 201 || typeof pr?.number !== 'number' || typeof pr.html_url !== 'string') {
      throw new HostApiError(`creating a pull request in ${input.repo} failed (${status}): ${hostMessage(body)}`, status, body);
    }
    return { number: pr.number, url: pr.html_url, state: typeof pr.state === 'string' ? pr.state : 'open', head: input.head, base: input.base };
  }

  /** `GET /users/{login}/keys`: a list of `{ id, key }`. */
  async userKeys(login: string): Promise<string[] | null> {
    if (!LOGIN.test(login)) return null;
    const url = `${this.options.api_url.replace(/\/+$/, '')}/users/${encodeURIComponent(login)}/keys`;
    const headers: Record<string, string> = { accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28', 'user-agent': 'svc' };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    const { status, body } = await getJson({ url, headers, timeoutMs: this.options.timeout_ms });
    if (status === 404) return null;
    if (status !== 200 || !Array.isArray(body)) throw new HostApiError(`listing the keys of ${login} failed (${status}): ${hostMessage(body)}`, status, body);
    return body.map((k: { key?: unknown }) => k?.key).filter((k): k is string => typeof k === 'string');
  }
}

/** JSON, or the `application/x-www-form-urlencoded` form a host may be set to send (the JSON in a `payload` field). */
function parseBody(request: InboundRequest): unknown {
  let text = request.body.toString('utf8');
  if (/^application\/x-www-form-urlencoded/i.test(headerOf(request, 'content-type') ?? '')) {
    const payload = new URLSearchParams(text).get('payload');
    if (payload === null) return 'a form-encoded delivery needs a payload field';
    text = payload;
  }
  try {
    const body: unknown = JSON.parse(text);
    return body && typeof body === 'object' && !Array.isArray(body) ? body : 'the delivery body must be a JSON object';
  } catch {
    return 'the delivery body is not valid JSON';
  }
}

export default defineAdapter<VcsHost, Options>({
  kind: 'vcshost',
  name: 'hub',
  options: optionsSchema,
  create: (options) => new HubHost(options),
});
