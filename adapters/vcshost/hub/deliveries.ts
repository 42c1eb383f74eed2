/**
 * Reading push, pull_request and pull_request_review deliveries of a GitHub-compatible host (GitHub,
 * GitHub Enterprise, Gitea, Forgejo) into the spine's `vcshost.push` / `vcshost.pull_request` /
 * `vcshost.pull_request_review` events.
 */
import { createHash } from 'node:crypto';
import Joi from 'joi';
import type { InboundEvent } from '../../../core/ports/integrations.ts';

type Json = Record<string, unknown>;

const SHA = Joi.string().pattern(/^[0-9a-f]{40}([0-9a-f]{24})?$/);
/** A branch deleted or created reports the other side as all zeros. */
const ZERO_SHA = /^0+$/;

const account = Joi.object({ login: Joi.string().required(), type: Joi.string() }).unknown(true);
const repository = Joi.object({ full_name: Joi.string().required() }).unknown(true);
const branchEnd = Joi.object({ ref: Joi.string().required(), sha: SHA.required() }).unknown(true);

const pushSchema = Joi.object({
  ref: Joi.string()
    .pattern(/^refs\//)
    .required(),
  before: SHA.required(),
  after: SHA.required(),
  commits: Joi.array().items(Joi.object().unknown(true)).default([]),
  head_commit: Joi.object().unknown(true).allow(null).default(null),
  repository: repository.required(),
  sender: account,
}).unknown(true);

const pullRequestSchema = Joi.object({
  action: Joi.string().required(),
  number: Joi.number().integer().min(1).required(),
  pull_request: Joi.object({
    title: Joi.string().allow('').required(),
    head: branchEnd.required(),
    base: branchEnd.required(),
  })
    .unknown(true)
    .required(),
  repository: repository.required(),
  sender: account,
}).unknown(true);

const pullRequestReviewSchema = pullRequestSchema.keys({
  review: Joi.object({ id: Joi.number().integer().required(), state: Joi.string().required(), body: Joi.string().allow('', null) })
    .unknown(true)
    .required(),
});

/** Keeps the listed fields that are present; the spine stores what triggers and conditions read, not the host's whole object. */
function pick(value: unknown, keys: string[]): Json | null {
  if (!value || typeof value !== 'object') return null;
  const source = value as Json;
  return Object.fromEntries(keys.filter((k) => source[k] !== undefined).map((k) => [k, source[k]]));
}

const pickAccount = (value: unknown) => pick(value, ['login', 'id', 'type', 'html_url']);

function pickRepository(value: unknown): Json | null {
  const repo = pick(value, ['id', 'name', 'full_name', 'html_url', 'clone_url', 'ssh_url', 'default_branch', 'private']);
  if (repo && (value as Json).owner) repo.owner = pickAccount((value as Json).owner);
  return repo;
}

function pickBranchEnd(value: unknown): Json | null {
  const end = pick(value, ['ref', 'sha', 'label']);
  if (end && (value as Json).repo) end.repo = pick((value as Json).repo, ['full_name', 'clone_url', 'html_url']);
  return end;
}

/** Prefixed, so a host login can never read as a svc user id (the router makes the actor the creator of the work). */
function actorOf(sender: unknown): Pick<InboundEvent, 'actor_type' | 'actor_id'> {
  const s = sender as { login?: string; type?: string } | undefined;
  if (!s?.login) return { actor_type: null, actor_id: null };
  return { actor_type: s.type === 'Bot' ? 'app' : 'user', actor_id: `vcshost:${s.login}` };
}

/** The body as the schema reads it, or the first problem (with its field path). */
function validated(schema: Joi.ObjectSchema, body: unknown, kind: string): { value: Json } | { problem: string } {
  const { value, error } = schema.validate(body, { abortEarly: true });
  return error ? { problem: `${kind} delivery: ${error.message}` } : { value };
}

/**
 * The dedupe key of a push: the push itself (repository, ref, before, after, and the host's
 * `repository.pushed_at` when it sends one), not the delivery id. The body is signed but carries no
 * nonce, so the same signed body sent again under a new delivery id (a replay) is the same push and
 * makes no second event; a redelivery is the same body and dedupes the same way. `pushed_at` tells
 * a real repeat of the same move (a tag deleted and pushed again at the same commit) from a replay.
 */
export function pushIdentity(p: Json): string {
  const repo = p.repository as Json;
  const pushedAt = repo.pushed_at ?? null;
  const identity = JSON.stringify([repo.full_name, p.ref, p.before, p.after, typeof pushedAt === 'number' || typeof pushedAt === 'string' ? pushedAt : null]);
  return `vcshost:push:${createHash('sha256').update(identity).digest('hex')}`;
}

/** A push delivery as the spine's event; its dedupe key is the push's identity (pushIdentity), whatever the delivery id. */
export function pushEvent(body: unknown): InboundEvent | string {
  const read = validated(pushSchema, body, 'push');
  if ('problem' in read) return read.problem;
  const p = read.value;
  const ref = p.ref as string;
  const after = p.after as string;
  return {
    type: 'vcshost.push',
    payload: {
      ref,
      before: p.before,
      after,
      created: p.created ?? ZERO_SHA.test(p.before as string),
      deleted: p.deleted ?? ZERO_SHA.test(after),
      forced: p.forced ?? false,
      compare: p.compare ?? p.compare_url ?? null,
      commits: p.commits,
      head_commit: p.head_commit,
      repository: pickRepository(p.repository),
      sender: pickAccount(p.sender),
      pusher: pick(p.pusher, ['name', 'email', 'username']),
    },
    ref_sha: ZERO_SHA.test(after) ? null : after,
    ref_branch: ref.startsWith('refs/heads/') ? ref.slice('refs/heads/'.length) : null,
    ...actorOf(p.sender),
    dedupe_key: pushIdentity(p),
  };
}

/** What an action is about beyond the pull request itself: which label, assignee, reviewer or milestone, what an edit changed, a synchronize's before and after. */
const ACTION_DETAIL = ['label', 'assignee', 'requested_reviewer', 'requested_team', 'milestone', 'changes', 'before', 'after'] as const;

/** A JSON text of `value` with object keys sorted, so the same content reads the same however it was serialized. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Json)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value ?? null);
}

/**
 * The dedupe key of a pull_request delivery: the event itself, not the delivery id, so a signed body
 * replayed under a new delivery id makes no second event (the body carries no nonce). The identity is
 * the repository, the PR number, the action, the head sha, the PR's `updated_at`, and the action's
 * own detail (ACTION_DETAIL). A genuine new event differs in one of them: another action; a push to
 * the branch (new head sha); a later change of the same kind (the host moves `updated_at` on every
 * change of the PR); and changes in the same second (`updated_at` has one-second resolution) differ
 * in what they are about (two labels added at once name different labels, two edits carry different
 * `changes`). A host that sends no `updated_at` gets the delivery id in the key instead, as before
 * (a replay under a new id is then a new event), rather than losing real repeats (closed, reopened,
 * closed again at one head). Returns null when neither is there (no dedupe).
 */
export function pullRequestIdentity(p: Json, deliveryId: string | null): string | null {
  const pr = p.pull_request as Json & { head: { sha: string } };
  const updatedAt = typeof pr.updated_at === 'string' || typeof pr.updated_at === 'number' ? pr.updated_at : null;
  if (updatedAt === null) return deliveryId ? `vcshost:${deliveryId}` : null;
  const detail = Object.fromEntries(ACTION_DETAIL.filter((k) => p[k] !== undefined && p[k] !== null).map((k) => [k, p[k]]));
  const identity = canonical([(p.repository as Json).full_name, p.number, p.action, pr.head.sha, updatedAt, detail]);
  return `vcshost:pull_request:${createHash('sha256').update(identity).digest('hex')}`;
}

/** A pull_request delivery as the spine's event; its dedupe key is the event's identity (pullRequestIdentity). */
export function pullRequestEvent(body: unknown, deliveryId: string | null): InboundEvent | string {
  const read = validated(pullRequestSchema, body, 'pull_request');
  if ('problem' in read) return read.problem;
  const p = read.value;
  return { type: 'vcshost.pull_request', ...pullRequestParts(p), dedupe_key: pullRequestIdentity(p, deliveryId) };
}

/**
 * A pull_request_review delivery (submitted, edited, dismissed) as `vcshost.pull_request_review`: the
 * pull request as in `vcshost.pull_request`, and the review's id, state (approved, changes_requested,
 * commented, dismissed), body and author. It dedupes on the review, its action and its state.
 */
export function pullRequestReviewEvent(body: unknown): InboundEvent | string {
  const read = validated(pullRequestReviewSchema, body, 'pull_request_review');
  if ('problem' in read) return read.problem;
  const p = read.value;
  const review = p.review as Json & { id: number; state: string };
  const parts = pullRequestParts(p);
  const identity = canonical([(p.repository as Json).full_name, p.number, review.id, p.action, review.state]);
  return {
    type: 'vcshost.pull_request_review',
    ...parts,
    payload: { ...parts.payload, review: { ...pick(review, ['id', 'state', 'body', 'submitted_at', 'html_url']), user: pickAccount(review.user) } },
    dedupe_key: `vcshost:pull_request_review:${createHash('sha256').update(identity).digest('hex')}`,
  };
}

/** What a pull_request and a pull_request_review event share: the pull request, its repository and sender, its head as the event's ref. */
function pullRequestParts(p: Json): Omit<InboundEvent, 'type' | 'dedupe_key'> & { payload: Json } {
  const pr = p.pull_request as Json & { head: { ref: string; sha: string } };
  const pullRequest = pick(pr, [
    'number',
    'title',
    'body',
    'state',
    'draft',
    'merged',
    'merged_at',
    'merge_commit_sha',
    'html_url',
    'created_at',
    'updated_at',
  ])!;
  return {
    payload: {
      action: p.action,
      number: p.number,
      pull_request: { ...pullRequest, user: pickAccount(pr.user), head: pickBranchEnd(pr.head), base: pickBranchEnd(pr.base) },
      repository: pickRepository(p.repository),
      sender: pickAccount(p.sender),
    },
    ref_sha: pr.head.sha,
    ref_branch: pr.head.ref,
    ...actorOf(p.sender),
  };
}
