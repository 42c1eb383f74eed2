import Boom from '@hapi/boom';
import type { ServerRoute } from '@hapi/hapi';
import { authenticated } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { paramsOf, queryOf } from '../../core/http/request.ts';
import { harnessNames, type AuthWhere, type HarnessDefinition } from '../../core/ports/harness.ts';
import type { Harnesses } from './registry.ts';
import * as S from './schemas.ts';

const tags = ['api', 'harnesses'];

async function view(harnesses: Harnesses, def: HarnessDefinition, where: AuthWhere) {
  const source = harnesses.sourceOf(def.id);
  const caps = def.capabilities;
  return {
    name: def.id,
    aliases: def.aliases ?? [],
    description: def.description,
    variants: (def.variants ?? []).map((v) => ({ name: v.name, description: v.description, source })),
    auth: await harnesses.auth(def.id, undefined, where).then(({ available, reason, instructions }) => ({ available, reason, instructions })),
    capabilities: {
      supports_model: caps?.supportsModel ?? false,
      model_examples: caps?.modelExamples ?? [],
      default_model: def.defaultModel ?? null,
      reasoning: { supported: caps?.reasoning.supported ?? false, levels: caps?.reasoning.levels ?? [], mode: caps?.reasoning.mode ?? null },
    },
  };
}

export function harnessRoutes(harnesses: Harnesses, where: AuthWhere = {}): ServerRoute[] {
  return [
    {
      method: 'GET',
      path: '/harnesses',
      options: {
        id: 'listHarnesses',
        description: 'The coding CLIs this server can run, built-in and from plugins, with whether each is available here',
        tags,
        plugins: { ...authenticated, ...docs(400, 401) },
        validate: { query: S.listQuery },
        response: { schema: S.harnessPage },
      },
      handler: async (request) => {
        const { limit, offset } = queryOf<{ limit: number; offset: number }>(request);
        const all = harnesses.list();
        const page = all.slice(offset, offset + limit);
        const data = await Promise.all(page.map((def) => view(harnesses, def, where)));
        return { data, pagination: { limit, offset, count: data.length, total: all.length, has_more: offset + data.length < all.length } };
      },
    },
    {
      method: 'GET',
      path: '/harnesses/{name}',
      options: {
        id: 'getHarness',
        description: 'One harness by id or alias (harness_e is also coder): variants, auth status and capabilities',
        tags,
        plugins: { ...authenticated, ...docs(400, 401, 404) },
        validate: { params: S.nameParams },
        response: { schema: S.harnessSchema },
      },
      handler: async (request) => {
        const { name } = paramsOf(request);
        const def = harnesses.get(name);
        if (!def) throw Boom.notFound(`unknown harness '${name}' (known: ${harnessNames(harnesses).join(', ')})`);
        return view(harnesses, def, where);
      },
    },
  ];
}
