/**
 * svc's own integration secrets: the names svc itself reads from system scope to act as the platform
 * (verify the chat app's and the code host's signatures, log in to a registry). The one list of
 * them. They never resolve into a job, whatever their row says, and a system admin cannot mark them
 * `shared_with_jobs` (422 naming the field); svc goes on reading them server-side (docs/security.md,
 * "System secrets and jobs").
 */
export const CHATAPP_SIGNING_SECRET = 'CHATAPP_SIGNING_SECRET';
/** A project's secret first (org and system secrets of the name apply to projects without one). */
export const VCSHOST_WEBHOOK_SECRET = 'VCSHOST_WEBHOOK_SECRET';
/** An own registry's login, when its `auth` names no other secrets. */
export const REGISTRY_USERNAME = 'REGISTRY_USERNAME';
export const REGISTRY_PASSWORD = 'REGISTRY_PASSWORD';

/** Name to what svc uses it for (said in the refusal). */
export const INTEGRATION_SECRETS: ReadonlyMap<string, string> = new Map([
  [CHATAPP_SIGNING_SECRET, "the chat app's signing secret, which verifies chat events for every tenant"],
  [VCSHOST_WEBHOOK_SECRET, "the code host's webhook secret, which verifies its deliveries"],
  [REGISTRY_USERNAME, 'the registry login svc pushes and pulls images with'],
  [REGISTRY_PASSWORD, 'the registry login svc pushes and pulls images with'],
]);

export const isIntegrationSecret = (name: string): boolean => INTEGRATION_SECRETS.has(name);
