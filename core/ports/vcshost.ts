import type { InjectionToken } from 'tsyringe';
import type { InboundEvent, InboundRequest, Verification } from './integrations.ts';

/** What a verified code-host delivery means: an event to store, a kind svc does not use, or a body it cannot read. */
export type VcsDelivery = { kind: 'event'; event: InboundEvent } | { kind: 'ignored'; event: string } | { kind: 'invalid'; message: string };

export interface PullRequestInput {
  /** `owner/name` */
  repo: string;
  title: string;
  body?: string;
  /** The branch with the changes (`owner:branch` for a fork). */
  head: string;
  base: string;
  draft?: boolean;
  /** The caller's token (a project's code-host token); the adapter's configured token otherwise. */
  token?: string;
}

export interface PullRequest {
  number: number;
  /** The page a person opens. */
  url: string;
  state: string;
  head: string;
  base: string;
}

/** A code host: verifies and reads its webhook deliveries, and opens pull requests through its API. */
export interface VcsHost {
  readonly name: string;
  verify(request: InboundRequest, webhookSecret: string): Verification;
  /** Only for a verified request. */
  normalize(request: InboundRequest): VcsDelivery;
  /** Throws HostApiError when the host refuses or does not answer. */
  createPullRequest(input: PullRequestInput): Promise<PullRequest>;
  /**
   * The public SSH keys the host lists for a user (OpenSSH lines); null for a user it does not know.
   * Throws HostApiError when the host refuses or does not answer. Optional: a host without it cannot
   * take part in invites naming a code-host user.
   */
  userKeys?(login: string): Promise<string[] | null>;
}

export const VcsHostToken = Symbol('VcsHost') as InjectionToken<VcsHost>;
