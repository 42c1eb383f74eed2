import Joi from 'joi';
import type { ServerRoute } from '@hapi/hapi';
import { requires } from '../../core/http/access.ts';
import { MAX_LIMIT, paginationSchema } from '../../core/http/lists.ts';
import { docs, orgId, projectId, timestamp } from '../../core/http/schemas.ts';
import { paramsOf, queryOf } from '../../core/http/request.ts';
import type { AgentDirectory } from './agents.ts';

const tags = ['api', 'agents'];

const readiness = Joi.object({
  name: Joi.string().required(),
  aliases: Joi.array().items(Joi.string()).required(),
  available: Joi.boolean().required().description('the binary is found and credentials are present in this scope'),
  reason: Joi.string().required(),
}).label('HarnessReadiness');

const candidate = Joi.object({
  harness: Joi.string().required(),
  model: Joi.string().allow(null).required(),
  reasoning_effort: Joi.string().allow(null).required(),
}).label('AgentCandidate');

const agentRun = Joi.alternatives()
  .try(
    Joi.object({
      harness: Joi.string().required(),
      model: Joi.string().allow(null).required(),
      reasoning_effort: Joi.string().allow(null).required(),
      variant: Joi.string().allow(null).required(),
      source: Joi.string().valid('override', 'harness', 'profile', 'default_profile', 'server_default').required(),
      profile: Joi.string().allow(null).required(),
      available: Joi.boolean().required(),
      fallbacks: Joi.array().items(candidate).required(),
      dropped: Joi.array()
        .items(Joi.object({ harness: Joi.string().required(), reason: Joi.string().required() }).label('DroppedAgent'))
        .required(),
    }).label('AgentRun'),
    Joi.object({ error: Joi.string().required().description('why no harness can be chosen (a job would fail the same way)') }).label('AgentRunError'),
  )
  .label('AgentRunOrError');

const manifestRef = Joi.object({ manifest_hash: Joi.string().required(), git_sha: Joi.string().allow(null).required(), synced_at: timestamp.required() })
  .label('AgentsManifestRef')
  .allow(null);

const projectAgents = Joi.object({
  project_id: projectId.required(),
  manifest: manifestRef.required().description('the synced manifest the profiles come from; null when none was synced'),
  version: Joi.number().integer().allow(null).required().description('x-svc.agents.version'),
  drop_unavailable: Joi.boolean().required(),
  default: agentRun.required().description('what a job naming no harness or profile runs'),
  profiles: Joi.array()
    .items(
      Joi.object({
        name: Joi.string().required(),
        entries: Joi.array().items(Joi.object().unknown(true)).required().description('as the manifest writes them'),
        runs: agentRun.required(),
      }).label('AgentProfile'),
    )
    .required(),
  harnesses: Joi.array().items(readiness).required(),
}).label('ProjectAgents');

const orgAgents = Joi.object({
  org_id: orgId.required(),
  harnesses: Joi.array().items(readiness).required().description("readiness in the org's scope (its secrets and the system's shared ones)"),
  projects: Joi.array()
    .items(
      Joi.object({
        project_id: projectId.required(),
        slug: Joi.string().allow(null).required(),
        manifest: manifestRef.required(),
        profiles: Joi.array().items(Joi.string()).required(),
        default: agentRun.required(),
      }).label('OrgProjectAgents'),
    )
    .required(),
  pagination: paginationSchema.required(),
}).label('OrgAgents');

const pageQuery = Joi.object({
  limit: Joi.number().integer().min(1).max(MAX_LIMIT).default(10).description(`projects per page, 1 to ${MAX_LIMIT}`),
  offset: Joi.number().integer().min(0).default(0),
});

/** GET /projects/{project_id}/agents and GET /orgs/{org_id}/agents (docs/harnesses.md, "Agent configuration"). */
export function agentRoutes(agents: AgentDirectory): ServerRoute[] {
  return [
    {
      method: 'GET',
      path: '/projects/{project_id}/agents',
      options: {
        id: 'getProjectAgents',
        tags,
        description: "The project's agent configuration: its manifest's profiles, what each would run now, and which harnesses are ready in its scope",
        plugins: { ...requires('manifest:read', 'project'), ...docs(400, 401, 404) },
        validate: { params: Joi.object({ project_id: projectId.required() }) },
        response: { schema: projectAgents },
      },
      handler: (request) => agents.ofProject(paramsOf(request).project_id),
    },
    {
      method: 'GET',
      path: '/orgs/{org_id}/agents',
      options: {
        id: 'getOrgAgents',
        tags,
        description: "Harnesses ready in the org's scope, and each of its projects' profiles and default choice (paged by project, oldest first)",
        plugins: { ...requires('projects:read', 'org'), ...docs(400, 401, 404) },
        validate: { params: Joi.object({ org_id: orgId.required() }), query: pageQuery },
        response: { schema: orgAgents },
      },
      handler: (request) => agents.ofOrg(paramsOf(request).org_id, queryOf<{ limit: number; offset: number }>(request)),
    },
  ];
}
