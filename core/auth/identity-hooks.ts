import type { InjectionToken } from 'tsyringe';

/** A public key that authenticated (its signature checked) but belongs to no account. */
export interface UnknownIdentity {
  kind: 'nostr' | 'ssh';
  publicKey: string;
  fingerprint?: string;
}

/**
 * Asked by a login flow when a verified key is registered to nobody: an implementation may create
 * the account (an identity-targeted invite does) and answer its id, or answer null to refuse.
 * The caller logs that account in; the handler registers the key on it (registering it again is
 * harmless).
 */
export interface UnknownIdentityHandler {
  onUnknownIdentity(identity: UnknownIdentity): Promise<{ userId: string } | null>;
}

export const UnknownIdentityHandlerToken = Symbol('UnknownIdentityHandler') as InjectionToken<UnknownIdentityHandler>;
