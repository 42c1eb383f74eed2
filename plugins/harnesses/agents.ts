import type { HarnessRegistry } from '../../core/ports/harness.ts';
import type { ManifestReader } from '../../core/ports/manifest.ts';
import type { ProjectDirectory } from '../../core/ports/directory.ts';
import type { SecretContext } from '../../core/ports/secrets.ts';
import { ProfileError, type AgentRequest } from '../../domain/manifest/profiles.ts';
import type { AgentsConfig, StoredManifest } from '../../domain/manifest/types.ts';

export interface HarnessReadiness {
  name: string;
  aliases: string[];
  available: boolean;
  reason: string;
}

/** What a job would run: the choice the worker makes, or why it cannot choose. */
export type AgentRun =
  | {
      harness: string;
      model: string | null;
      reasoning_effort: string | null;
      variant: string | null;
      source: string;
      profile: string | null;
      available: boolean;
      fallbacks: { harness: string; model: string | null; reasoning_effort: string | null }[];
      dropped: { harness: string; reason: string }[];
    }
  | { error: string };

/**
 * A project's agent configuration as jobs meet it (`GET /projects/{id}/agents`): the manifest's
 * `x-svc.agents` profiles, what each one (and a job naming nothing) would run right now, and which
 * harnesses are ready in the project's scope (binary and credentials, its secrets included); the
 * org-level listing (`GET /orgs/{id}/agents`) gives the harnesses in the org's scope and each
 * project's default choice. Reads the manifest and projects through their owners' ports.
 */
export class AgentDirectory {
  constructor(
    private readonly harnesses: HarnessRegistry,
    private readonly manifests: () => ManifestReader | null,
    private readonly projects: () => ProjectDirectory | null,
  ) {}

  async ofProject(projectId: string) {
    const manifest = (await this.manifests()?.current(projectId)) ?? null;
    const agents = manifest?.parsed['x-svc']?.agents;
    const ctx = { projectId };
    const harnesses = await this.readiness(ctx);
    const run = (request: AgentRequest) => this.run(request, agents, ctx, async (id) => harnesses.find((h) => h.name === id)?.available ?? false);
    return {
      project_id: projectId,
      manifest: manifestRef(manifest),
      version: agents?.version ?? null,
      drop_unavailable: agents?.availability?.drop_unavailable === true,
      default: await run({}),
      profiles: await Promise.all(
        profileNames(agents).map(async (name) => ({ name, entries: agents!.profiles![name], runs: await run({ harness_profile: name }) })),
      ),
      harnesses,
    };
  }

  async ofOrg(orgId: string, page: { limit: number; offset: number }) {
    const ids = (await this.projects()?.liveIdsInOrg(orgId)) ?? [];
    const slugs = (await this.projects()?.liveSlugs(ids)) ?? new Map<string, string>();
    const harnesses = await this.readiness({ orgId });
    const shown = ids.slice(page.offset, page.offset + page.limit);
    const projects = await Promise.all(
      shown.map(async (projectId) => {
        const manifest = (await this.manifests()?.current(projectId)) ?? null;
        const agents = manifest?.parsed['x-svc']?.agents;
        const ctx = { projectId };
        return {
          project_id: projectId,
          slug: slugs.get(projectId) ?? null,
          manifest: manifestRef(manifest),
          profiles: profileNames(agents),
          default: await this.run({}, agents, ctx, async (id) => (await this.harnesses.auth(id, ctx)).available),
        };
      }),
    );
    return {
      org_id: orgId,
      harnesses,
      projects,
      pagination: { limit: page.limit, offset: page.offset, count: projects.length, total: ids.length, has_more: page.offset + projects.length < ids.length },
    };
  }

  private readiness(ctx: SecretContext): Promise<HarnessReadiness[]> {
    return Promise.all(
      this.harnesses.list().map(async (def) => {
        const { available, reason } = await this.harnesses.auth(def.id, ctx);
        return { name: def.id, aliases: def.aliases ?? [], available, reason };
      }),
    );
  }

  private async run(
    request: AgentRequest,
    agents: AgentsConfig | undefined,
    ctx: SecretContext,
    available: (harnessId: string) => Promise<boolean>,
  ): Promise<AgentRun> {
    try {
      const choice = await this.harnesses.resolve(request, agents, ctx);
      return {
        harness: choice.harness,
        model: choice.model ?? null,
        reasoning_effort: choice.reasoningEffort ?? null,
        variant: choice.variant ?? null,
        source: choice.source,
        profile: choice.profile,
        available: await available(choice.harness),
        fallbacks: choice.fallbacks.map((f) => ({ harness: f.harness, model: f.model ?? null, reasoning_effort: f.reasoningEffort ?? null })),
        dropped: choice.dropped,
      };
    } catch (err) {
      if (err instanceof ProfileError) return { error: err.message };
      throw err;
    }
  }
}

/** By name: the stored manifest keeps no key order. */
const profileNames = (agents: AgentsConfig | undefined): string[] => Object.keys(agents?.profiles ?? {}).sort();

const manifestRef = (m: StoredManifest | null) => (m ? { manifest_hash: m.manifest_hash, git_sha: m.git_sha, synced_at: m.synced_at } : null);
