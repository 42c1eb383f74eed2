import { setTimeout as sleep } from 'node:timers/promises';
import { claimWorld, type World } from '../jobs/claim-helpers.ts';
import type { TestServerOptions } from '../support/server.ts';

/** A server that also runs the orchestrator (event router, cron re-sync), its scheduler polling every 100 ms. */
export const ORCHESTRATOR: TestServerOptions['overrides'] = {
  roles: ['api', 'orchestrator'],
  adapters: { scheduler: { use: 'agenda', options: { process_every_ms: 100 } } },
};

export const eventWorld = (name: string, orchestrator = false): Promise<World> => claimWorld(name, orchestrator ? { overrides: ORCHESTRATOR } : {});

export async function syncManifest(w: World, yaml: string, project = w.projectA): Promise<any> {
  const res = await w.owner.api.post(`/projects/${project}/manifest`, { yaml });
  if (res.statusCode !== 200) throw new Error(`manifest: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body;
}

export async function postEvent(w: World, body: Record<string, unknown>, project = w.projectA): Promise<any> {
  const res = await w.owner.api.post(`/projects/${project}/events`, body);
  if (res.statusCode !== 201) throw new Error(`event: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Polls until `check` returns something truthy (or throws after `ms`). */
export async function eventually<T>(check: () => Promise<T | undefined | null | false>, ms = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

/** The event once routed (completed or failed), read through the API. */
export async function routed(w: World, eventId: string, project = w.projectA): Promise<any> {
  return eventually(
    async () => {
      const res = await w.owner.api.get(`/projects/${project}/events/${eventId}`);
      return res.body.status === 'completed' || res.body.status === 'failed' ? res.body : null;
    },
    10_000,
    `event ${eventId} to be routed`,
  );
}
