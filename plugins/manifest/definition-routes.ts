import Boom from '@hapi/boom';
import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';
import { paramsOf, queryOf } from '../../core/http/request.ts';
import { requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { pageSchema, type Page } from '../../core/http/lists.ts';
import type { Permission } from '../../core/auth/permissions.ts';
import type { Manifest } from '../../domain/manifest/types.ts';
import { isObject } from '../../core/is-object.ts';
import * as S from './schemas.ts';
import { ManifestRepository } from './repository.ts';
import { OffLoopParser } from './off-loop.ts';

type Named = { name: string } & Record<string, unknown>;

interface Kind {
  section: 'workflows' | 'pipelines';
  noun: 'workflow' | 'pipeline';
  permission: Permission;
  label: string;
}

const KINDS: Kind[] = [
  { section: 'workflows', noun: 'workflow', permission: 'workflows:read', label: 'Workflow' },
  { section: 'pipelines', noun: 'pipeline', permission: 'pipelines:read', label: 'Pipeline' },
];

/**
 * The section's definitions in the order the YAML lists them: the stored parsed form is JSONB,
 * which keeps keys in its own order, so the order comes from the YAML text stored beside it.
 */
async function definitions(parser: OffLoopParser, stored: { parsed: Manifest; yaml: string } | null | undefined, section: Kind['section']): Promise<Named[]> {
  const byName = stored?.parsed[section] ?? {};
  // A large stored manifest parses off the event loop, like at sync.
  const doc = stored ? (await parser.parse(stored.yaml, 'the stored manifest')).doc : null;
  const listed = isObject(doc) && isObject(doc[section]) ? Object.keys(doc[section]).filter((name) => Object.hasOwn(byName, name)) : [];
  const names = [...listed, ...Object.keys(byName).filter((name) => !listed.includes(name))];
  const written = (name: string): unknown => (isObject(doc) && isObject(doc[section]) ? doc[section][name] : undefined);
  return names.map((name) => withInputsInOrder({ name, ...(byName[name] as object) }, written(name)));
}

/** A pipeline's declared inputs in the order its YAML lists them (a form shows them so), like the definitions themselves. */
function withInputsInOrder(definition: Named, written: unknown): Named {
  const stored = definition.inputs;
  if (!isObject(stored) || !isObject(written) || !isObject(written.inputs)) return definition;
  const listed = Object.keys(written.inputs).filter((key) => Object.hasOwn(stored, key));
  const order = [...listed, ...Object.keys(stored).filter((key) => !listed.includes(key))];
  return { ...definition, inputs: Object.fromEntries(order.map((key) => [key, stored[key]])) };
}

/** Read-only listing of the current manifest's workflows and pipelines, in manifest order. */
export function definitionRoutes(container: DependencyContainer): ServerRoute[] {
  const manifests = container.resolve(ManifestRepository);
  const parser = container.resolve(OffLoopParser);
  return KINDS.flatMap((kind): ServerRoute[] => {
    const item = S.definitionSchema(kind.label, S.definitionKeys[kind.section]);
    const tags = ['api', kind.section];
    return [
      {
        method: 'GET',
        path: `/projects/{project_id}/${kind.section}`,
        options: {
          id: `list${kind.label}s`,
          tags,
          description: `${kind.label}s defined in the current manifest (empty when none was synced)`,
          plugins: { ...requires(kind.permission, 'project'), ...docs(400, 401, 403, 404) },
          validate: { params: S.projectParams, query: S.pageQuery },
          response: { schema: pageSchema(item, `${kind.label}List`) },
        },
        handler: async (request): Promise<Page<Named>> => {
          const { limit, offset } = queryOf<{ limit: number; offset: number }>(request);
          const all = await definitions(parser, await manifests.current(paramsOf(request).project_id), kind.section);
          const data = all.slice(offset, offset + limit);
          return { data, pagination: { limit, offset, count: data.length, total: all.length, has_more: offset + data.length < all.length } };
        },
      },
      {
        method: 'GET',
        path: `/projects/{project_id}/${kind.section}/{name}`,
        options: {
          id: `get${kind.label}`,
          tags,
          description: `One ${kind.noun} definition from the current manifest`,
          plugins: { ...requires(kind.permission, 'project'), ...docs(400, 401, 403, 404) },
          validate: { params: S.namedParams },
          response: { schema: item },
        },
        handler: async (request) => {
          const { project_id, name } = paramsOf(request);
          const found = (await definitions(parser, await manifests.current(project_id), kind.section)).find((d) => d.name === name);
          if (!found) throw Boom.notFound(`${kind.noun} '${name}' not found in the current manifest of project ${project_id}`);
          return found;
        },
      },
    ];
  });
}
