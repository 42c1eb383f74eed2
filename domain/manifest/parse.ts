import { LineCounter, parseDocument } from 'yaml';
import type { Manifest, ManifestProblem } from './types.ts';
import { isObject } from './problems.ts';
import { validateManifest } from './validate.ts';
import { manifestHash } from './hash.ts';

/** Largest manifest accepted, in bytes of YAML. */
export const MAX_MANIFEST_BYTES = 512 * 1024;

export type ManifestResult = { ok: true; manifest: Manifest; hash: string } | { ok: false; errors: ManifestProblem[] };

/** YAML text → plain data, or the syntax problems (duplicate keys included) with their line. */
export function parseYaml(text: string): { doc: unknown; errors: ManifestProblem[] } {
  if (Buffer.byteLength(text, 'utf8') > MAX_MANIFEST_BYTES) {
    return { doc: null, errors: [{ path: '', message: `the manifest is larger than ${MAX_MANIFEST_BYTES / 1024} KB` }] };
  }
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

/** A valid document in the parsed form: `run` → `script.run`, `script.command` → `script.run`, `depends_on` always a list. */
export function normalizeManifest(doc: Record<string, unknown>): Manifest {
  const out: Record<string, unknown> = { ...doc };
  if (doc.workflows !== undefined) out.workflows = normalizeFlows(doc.workflows);
  if (doc.pipelines !== undefined) out.pipelines = normalizeFlows(doc.pipelines);
  return out as Manifest;
}

/** Parse, validate (every problem) and normalize a manifest; the hash is over the normalized form. */
export function loadManifest(text: string): ManifestResult {
  const { doc, errors } = parseYaml(text);
  if (errors.length) return { ok: false, errors };
  const problems = validateManifest(doc);
  if (problems.length) return { ok: false, errors: problems };
  const manifest = normalizeManifest(doc as Record<string, unknown>);
  return { ok: true, manifest, hash: manifestHash(manifest) };
}
