import { isDeepStrictEqual } from 'node:util';
import { isObject } from '../is-object.ts';

/**
 * The component schemas of the OpenAPI document hapi-swagger builds, made into ones a client
 * generator and a reader can use (docs/openapi.md):
 *
 * - hapi-swagger names a schema after its joi label, else after the key it sits under (`data`,
 *   `status`), else `Model<n>`. Only labels name components: a schema named any other way is part
 *   of the schema that holds it, and is written there (inline) instead of beside it.
 * - The schemas under a `Joi.alternatives()` go to a top-level `x-alt-definitions` that no OpenAPI
 *   tool reads (hapi-swagger#886). Those with a label join the components under that name: one
 *   schema when both are the same, else a numbered name (two shapes under one label, which the
 *   document test refuses); the rest are written inline as above.
 * - `nullable` beside `anyOf` (joi `alternatives().allow(null)`) has no `type` to qualify, which
 *   OpenAPI 3.0 requires: it moves onto the alternatives that have one.
 */

type Schema = Record<string, unknown>;

const COMPONENTS = '#/components/schemas/';
const ALTERNATIVES = '#/x-alt-definitions/';

/** A name a joi label gave: hapi-swagger's other names are keys (snake_case or camelCase) and `Model<n>`. */
export const isLabelName = (name: string): boolean => /^[A-Z][A-Za-z0-9]*$/.test(name) && !/^Model\d+$/.test(name);

interface Pools {
  components: Record<string, Schema>;
  alternatives: Record<string, Schema>;
}

/** What a `$ref` of hapi-swagger's becomes: a reference to a named component (with the annotations of that use), or the schema itself. */
type Resolved = { ref: string; annotations: Schema } | { inline: Schema };

/** What joi says of one use of a labelled schema rather than of the schema: `.allow(null)`, `.description()`, `.default()`. */
const USE_KEYS = ['nullable', 'description', 'default'] as const;

const without = (schema: Schema, keys: readonly string[]): Schema => Object.fromEntries(Object.entries(schema).filter(([key]) => !keys.includes(key)));

class SchemaRewriter {
  private readonly resolved = new Map<string, Resolved>();
  private readonly resolving = new Set<string>();
  /** The components of the result, by name. */
  readonly named: Record<string, Schema> = {};

  constructor(private readonly pools: Pools) {}

  /** Every labelled schema, components first, so an alternative's twin is there to compare with. */
  nameAll(): void {
    for (const name of Object.keys(this.pools.components)) if (isLabelName(name)) this.resolve(COMPONENTS + name);
    for (const name of Object.keys(this.pools.alternatives)) if (isLabelName(name)) this.resolve(ALTERNATIVES + name);
  }

  /** `schema` with each reference rewritten: to its component, or replaced by the schema it names. */
  rewrite(schema: unknown): unknown {
    if (Array.isArray(schema)) return schema.map((item) => this.rewrite(item));
    if (!isObject(schema)) return schema;
    if (typeof schema.$ref === 'string' && (schema.$ref.startsWith(COMPONENTS) || schema.$ref.startsWith(ALTERNATIVES))) {
      const { $ref, ...siblings } = schema;
      const target = this.resolve($ref);
      const rest = this.rewrite(siblings) as Schema;
      if ('inline' in target) return { ...structuredClone(target.inline), ...rest };
      return { ...referenceTo(target.ref, this.named[target.ref.slice(COMPONENTS.length)], target.annotations), ...rest };
    }
    return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, this.rewrite(value)]));
  }

  private resolve(ref: string): Resolved {
    const known = this.resolved.get(ref);
    if (known) return known;
    if (this.resolving.has(ref)) throw new Error(`OpenAPI schema ${ref} refers to itself through unlabelled schemas: label one of them`);
    const fromAlternatives = ref.startsWith(ALTERNATIVES);
    const name = decodeURIComponent(ref.slice(fromAlternatives ? ALTERNATIVES.length : COMPONENTS.length));
    const pool = fromAlternatives ? this.pools.alternatives : this.pools.components;
    if (!Object.hasOwn(pool, name)) throw new Error(`OpenAPI schema ${ref} is referred to but not defined`);
    this.resolving.add(ref);
    const schema = this.rewrite(pool[name]) as Schema;
    this.resolving.delete(ref);
    const result: Resolved = isLabelName(name) ? this.name(labelOf(name, pool), schema) : { inline: schema };
    this.resolved.set(ref, result);
    return result;
  }

  /** The component of a labelled schema: the one of that label with the same shape, else a new one (`Label2` when the label is taken). */
  private name(label: string, schema: Schema): Resolved {
    const shape = without(schema, USE_KEYS);
    let unique = label;
    for (let n = 2; Object.hasOwn(this.named, unique) && !isDeepStrictEqual(without(this.named[unique], USE_KEYS), shape); n++) unique = `${label}${n}`;
    if (!Object.hasOwn(this.named, unique)) this.named[unique] = without(schema, ['nullable']);
    const component = this.named[unique];
    const annotations = Object.fromEntries(
      USE_KEYS.filter((key) => schema[key] !== undefined && !isDeepStrictEqual(schema[key], component[key])).map((key) => [key, schema[key]]),
    );
    return { ref: COMPONENTS + unique, annotations };
  }
}

/**
 * hapi-swagger names a second, different schema under a taken label `Label1`, `Label2`… (definitionPrefix
 * useLabel): the label is the name without the number when the pool holds that name too.
 */
function labelOf(name: string, pool: Record<string, Schema>): string {
  const numbered = /^(.*\D)\d+$/.exec(name);
  return numbered && Object.hasOwn(pool, numbered[1]) ? numbered[1] : name;
}

/**
 * A reference to a component, with what this use adds: `nullable` (with the `type` OpenAPI 3.0 wants
 * beside it), its own description or default; `$ref` takes no siblings, so those wrap it in `allOf`.
 */
function referenceTo(ref: string, component: Schema, annotations: Schema): Schema {
  if (Object.keys(annotations).length === 0) return { $ref: ref };
  const { nullable, ...rest } = annotations;
  if (nullable !== true) return { ...rest, allOf: [{ $ref: ref }] };
  if (component.type !== undefined) return { ...rest, type: component.type, nullable: true, allOf: [{ $ref: ref }] };
  return { ...rest, anyOf: [{ $ref: ref }, { type: 'string', nullable: true, enum: [null] }] };
}

/** `nullable` needs a `type` beside it (OpenAPI 3.0): on alternatives it moves to those that have one. */
export function qualifyNullable(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(qualifyNullable);
  if (!isObject(schema)) return schema;
  const out = Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, qualifyNullable(value)])) as Schema;
  const members = (out.anyOf ?? out.oneOf) as unknown[] | undefined;
  if (out.nullable === true && out.type === undefined && Array.isArray(members)) {
    delete out.nullable;
    const typed = members.filter((m): m is Schema => isObject(m) && m.type !== undefined);
    for (const member of typed) member.nullable = true;
    if (typed.length === 0) members.push({ type: 'string', nullable: true, enum: [null] });
  }
  return out;
}

interface Document {
  components?: { schemas?: Record<string, Schema> };
  paths?: Record<string, unknown>;
  [key: string]: unknown;
}

/** The document with components named by their labels only and no `x-alt-definitions` (see above). */
export function normalizeSchemas<D extends Document>(document: D): D {
  const { 'x-alt-definitions': alternatives, ...rest } = document;
  const rewriter = new SchemaRewriter({ components: document.components?.schemas ?? {}, alternatives: (alternatives as Record<string, Schema>) ?? {} });
  rewriter.nameAll();
  const paths = qualifyNullable(rewriter.rewrite(document.paths ?? {})) as Record<string, unknown>;
  const schemas = qualifyNullable(rewriter.named) as Record<string, Schema>;
  const sorted = Object.fromEntries(
    Object.keys(schemas)
      .sort()
      .map((name) => [name, schemas[name]]),
  );
  return { ...rest, paths, components: { ...document.components, schemas: sorted } } as D;
}
