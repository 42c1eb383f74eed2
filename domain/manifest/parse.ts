import { LineCounter, parseDocument } from 'yaml';
import type { Manifest, ManifestProblem } from './types.ts';
import { IGNORED_KEYS, isObject } from './problems.ts';
import { checkManifest } from './validate.ts';
import { manifestHash } from './hash.ts';
import { yamlTooDeep } from '../../core/nesting.ts';
import { DEFAULT_PARSE_LIMITS } from '../../core/parse-limits.ts';

/** Largest manifest accepted, in bytes of YAML. */
export const MAX_MANIFEST_BYTES = 512 * 1024;

export type ManifestResult = { ok: true; manifest: Manifest; hash: string; warnings: ManifestProblem[] } | { ok: false; errors: ManifestProblem[] };

/** Why a manifest text is refused before it is parsed (too large, nested too deeply), or null. */
export function manifestTextProblem(text: string, maxDepth: number = DEFAULT_PARSE_LIMITS.max_depth): string | null {
  if (Buffer.byteLength(text, 'utf8') > MAX_MANIFEST_BYTES) return `the manifest is larger than ${MAX_MANIFEST_BYTES / 1024} KB`;
  const deep = yamlTooDeep(text, maxDepth);
  if (deep) return `the document is nested more than ${maxDepth} levels deep (line ${deep.line}, column ${deep.column}); the limit is ${maxDepth} levels`;
  return null;
}

/**
 * YAML text → plain data, or the syntax problems (duplicate keys included) with their line. A text
 * nested deeper than `maxDepth` is refused before the parser sees it (core/nesting.ts).
 */
export function parseYaml(text: string, maxDepth: number = DEFAULT_PARSE_LIMITS.max_depth): { doc: unknown; errors: ManifestProblem[] } {
  const problem = manifestTextProblem(text, maxDepth);
  if (problem) return { doc: null, errors: [{ path: '', message: problem }] };
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { uniqueKeys: true, prettyErrors: false, lineCounter });
  if (document.errors.length) {
    const errors = document.errors.map((e) => {
      const line = e.pos ? lineCounter.linePos(e.pos[0]) : undefined;
      return { path: '', message: `invalid YAML${line ? ` at line ${line.line}, column ${line.col}` : ''}: ${e.message.split('\n')[0]}` };
    });
    return { doc: null, errors };
  }
  try {
    return { doc: document.toJS({ maxAliasCount: 100 }) ?? {}, errors: [] };
  } catch (e) {
    return { doc: null, errors: [{ path: '', message: `invalid YAML: ${(e as Error).message}` }] };
  }
}

function normalizeStep(step: Record<string, unknown>): Record<string, unknown> {
  const { run, ...rest } = step;
  const out: Record<string, unknown> = { ...rest, depends_on: (step.depends_on as string[] | undefined) ?? [] };
  if (run !== undefined) out.script = { run };
  if (isObject(step.script) && step.script.command !== undefined) {
    const { command, ...script } = step.script;
    out.script = { ...script, run: command };
  }
  return out;
}

function normalizeFlows(flows: unknown): unknown {
  if (!isObject(flows)) return flows;
  return Object.fromEntries(
    Object.entries(flows).map(([name, def]) => {
      const d = def as Record<string, unknown>;
      return [name, { ...d, steps: ((d.steps as Record<string, unknown>[] | undefined) ?? []).map(normalizeStep) }];
    }),
  );
}

const withoutKeys = (o: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> =>
  Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k)));

/** A valid document in the parsed form (keys svc ignores left out): `run` → `script.run`, `script.command` → `script.run`, `depends_on` always a list. */
export function normalizeManifest(doc: Record<string, unknown>): Manifest {
  const out: Record<string, unknown> = withoutKeys(doc, IGNORED_KEYS.root);
  if (isObject(doc.services)) {
    out.services = Object.fromEntries(Object.entries(doc.services).map(([name, s]) => [name, isObject(s) ? withoutKeys(s, IGNORED_KEYS.service) : s]));
  }
  if (doc.workflows !== undefined) out.workflows = normalizeFlows(doc.workflows);
  if (doc.pipelines !== undefined) out.pipelines = normalizeFlows(doc.pipelines);
  return out as Manifest;
}

/** Parse, validate (every problem) and normalize a manifest; the hash is over the normalized form. */
export function loadManifest(text: string, maxDepth: number = DEFAULT_PARSE_LIMITS.max_depth): ManifestResult {
  const { doc, errors } = parseYaml(text, maxDepth);
  if (errors.length) return { ok: false, errors };
  const { errors: problems, warnings } = checkManifest(doc);
  if (problems.length) return { ok: false, errors: problems };
  const manifest = normalizeManifest(doc as Record<string, unknown>);
  return { ok: true, manifest, hash: manifestHash(manifest), warnings };
}
