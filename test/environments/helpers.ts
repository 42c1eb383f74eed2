import { readFileSync } from 'node:fs';
import { DeployerToken } from '../../core/ports/environments.ts';
import { ReleasesToken } from '../../core/ports/releases.ts';
import { claimWorld, type World } from '../jobs/claim-helpers.ts';
import { RecordingDeployer, FakeReleases } from '../fixtures/deployer.ts';
import type { TestServerOptions } from '../support/server.ts';

export const example = (name: string): string => readFileSync(new URL(`../../examples/manifests/${name}`, import.meta.url), 'utf8');

export type EnvWorld = World & { deployer: RecordingDeployer; releases: FakeReleases };

/** The claim world with `yaml` synced into project A, on the server `opts` make. */
export async function envWorldWith(name: string, yaml: string, opts: TestServerOptions): Promise<World> {
  const w = await claimWorld(name, opts);
  const res = await w.owner.api.post(`/projects/${w.projectA}/manifest`, { yaml });
  if (res.statusCode !== 200) throw new Error(`manifest: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return w;
}

/** The claim world with a recording deployer and a fake release catalog, and `yaml` synced into project A. */
export async function envWorld(name: string, yaml: string, opts: TestServerOptions = {}): Promise<EnvWorld> {
  const deployer = new RecordingDeployer();
  const releases = new FakeReleases();
  const w = await envWorldWith(name, yaml, {
    ...opts,
    configure: (c) => {
      c.registerInstance(DeployerToken, deployer);
      c.registerInstance(ReleasesToken, releases);
    },
  });
  return { ...w, deployer, releases };
}

export const sha = (c: string) => c.repeat(40).slice(0, 40);

/** Waits until the deploy has ended (deploys run in the background). */
export async function settled(w: World, env: string, deployId: string, project = w.projectA, ms = 60_000): Promise<any> {
  for (const end = Date.now() + ms; Date.now() < end;) {
    const res = await w.owner.api.get(`/projects/${project}/environments/${env}/deploys/${deployId}`);
    if (res.body.status !== 'running') return res.body;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`deploy ${deployId} still running`);
}

export const eventsOf = (w: World, type: string, project = w.projectA) =>
  w.db('events').where({ project_id: project }).where('type', 'like', type).orderBy('created_at').select('type', 'payload_json', 'env_name');
