import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { BuildFailure, BuilderRegistry, type Builder, type BuildRequest, type BuiltImage } from '../../core/ports/builder.ts';
import { BuilderRegistryToken } from '../../core/ports/builder.ts';
import { tempRepo } from '../manifest/helpers.ts';
import { as, bootstrapAdmin, startTestServer, userInOrg, type TestServer, type TestServerOptions } from '../support/server.ts';

export const TWO_SERVICES = `
registry: none
services:
  api:
    build: { context: api }
  web:
    build: { context: web, dockerfile: Dockerfile }
  db:
    image: postgres
pipelines:
  ship:
    steps:
      - { name: build, action: { type: build } }
      - { name: release, action: { type: release }, depends_on: [build] }
  forced:
    steps:
      - { name: build, action: { type: build, with: { force_rebuild: true, services: [api] } } }
      - { name: release, action: { type: release, with: { tag: forced } }, depends_on: [build] }
`;

/** A repository with the two-service manifest and a Dockerfile per service; `sha` is its head. */
export function twoServiceRepo(manifest = TWO_SERVICES) {
  const repo = tempRepo();
  for (const service of ['api', 'web']) {
    mkdirSync(path.join(repo.dir, service), { recursive: true });
    writeFileSync(path.join(repo.dir, service, 'Dockerfile'), `FROM svc-test-base:2\nCOPY . /srv/${service}\n`);
  }
  const sha = repo.commit(manifest, 'two services');
  return { ...repo, sha };
}

const digestOf = (n: number) => `sha256:${n.toString(16).padStart(64, '0')}`;

/**
 * A builder for the tests that need no engine: it records what it was asked, writes a few lines
 * of output, and answers with what the test scripted (images, a failure, or a wait until aborted).
 */
export class ScriptedBuilder implements Builder {
  readonly name = 'buildx';
  requests: BuildRequest[] = [];
  next: 'images' | 'none' | 'fail' | 'hang' = 'images';
  unavailable: string | null = null;
  /** One more output line made from the request (e.g. to see that credentials are masked). */
  echo: ((request: BuildRequest) => string) | null = null;
  private count = 0;

  async available() {
    return this.unavailable ? ({ ok: false, reason: this.unavailable } as const) : ({ ok: true } as const);
  }

  async build(request: BuildRequest): Promise<BuiltImage[]> {
    this.requests.push(request);
    for (let i = 1; i <= 40; i++) request.log(`step line ${i}`);
    if (this.echo) request.log(this.echo(request));
    if (this.next === 'fail') throw new BuildFailure('build_error', 'api: process "/bin/sh -c false" did not complete successfully', '[build 2/3] RUN false');
    if (this.next === 'none') return [];
    if (this.next === 'hang')
      await new Promise((_, reject) => {
        if (request.signal.aborted) reject(request.signal.reason);
        request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true });
      });
    return request.services.map((s) => ({
      service_name: s.service,
      image_ref: s.image_ref,
      digest: digestOf(++this.count),
      platforms: ['linux/amd64'],
      size_bytes: 1234,
    }));
  }
}

export interface BuildWorld {
  s: TestServer;
  admin: ReturnType<typeof as>;
  adminToken: string;
  member: ReturnType<typeof as>;
  outsider: ReturnType<typeof as>;
  orgId: string;
  builder: ScriptedBuilder;
  project(repoUrl?: string): Promise<string>;
}

let slugs = 0;

export async function buildWorld(opts: TestServerOptions & { worker?: boolean } = {}): Promise<BuildWorld> {
  const builder = new ScriptedBuilder();
  const s = await startTestServer({
    ...opts,
    overrides: { roles: opts.worker ? ['api', 'worker'] : ['api'], builds: { poll_ms: 50, log_flush_ms: 0 }, ...(opts.overrides ?? {}) },
    configure: (container) => {
      const registry = new BuilderRegistry();
      registry.add(builder);
      container.registerInstance(BuilderRegistryToken, registry);
    },
  });
  const adminToken = (await bootstrapAdmin(s.server)).token;
  const admin = as(s.server, adminToken);
  const orgId = (await admin.post('/orgs', { name: 'Build Org' })).body.id;
  const member = as(s.server, await userInOrg(s.server, adminToken, orgId, 'member@example.com', 'member'));
  const otherOrg = (await admin.post('/orgs', { name: 'Other Org' })).body.id;
  const outsider = as(s.server, await userInOrg(s.server, adminToken, otherOrg, 'outsider@example.com', 'owner'));
  return {
    s,
    admin,
    adminToken,
    member,
    outsider,
    orgId,
    builder,
    async project(repoUrl?: string) {
      const res = await admin.post('/projects', {
        org_id: orgId,
        name: `B${++slugs}`,
        slug: `bld${slugs}${process.pid % 10}`,
        ...(repoUrl ? { repo_url: repoUrl } : {}),
      });
      if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
      return res.body.id;
    },
  };
}

/** Polls the build until its latest run ended. */
export async function settled(api: ReturnType<typeof as>, buildId: string, ms = 20_000): Promise<any> {
  const deadline = Date.now() + ms;
  for (;;) {
    const res = await api.get(`/builds/${buildId}`);
    if (!['pending', 'building'].includes(res.body.status)) return res.body;
    if (Date.now() > deadline) throw new Error(`build ${buildId} still ${res.body.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
