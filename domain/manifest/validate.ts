import type { ManifestProblem } from './types.ts';
import { IGNORED_KEYS, Problems, kindOf, isObject, unknownKeys } from './problems.ts';
import { checkPipelines, checkWorkflows } from './validate-flows.ts';
import { apiNames, checkSvcExtension } from './validate-xsvc.ts';
import { checkEnvironments, checkRegistry, checkServices } from './validate-deploy.ts';

/** The manifest's sections; other top-level keys must be `x-…` extensions. */
const SECTIONS = ['workflows', 'pipelines', 'registry', 'services', 'environments', 'x-svc'] as const;

/**
 * Every problem in a manifest document (as YAML gave it), each with its path. An empty list means
 * the document can be normalized (`normalizeManifest`).
 */
export function validateManifest(doc: unknown): ManifestProblem[] {
  return checkManifest(doc).errors;
}

/** Every problem (`errors`, which refuse the manifest) and every key it ignores (`warnings`). */
export function checkManifest(doc: unknown): { errors: ManifestProblem[]; warnings: ManifestProblem[] } {
  const problems = new Problems();
  if (!isObject(doc)) {
    problems.add('', `the manifest must be a mapping, got ${kindOf(doc)}`);
    return { errors: problems.list, warnings: [] };
  }
  unknownKeys(problems, doc, SECTIONS, '', IGNORED_KEYS.root);
  checkSvcExtension(problems, doc['x-svc']);
  checkWorkflows(problems, doc.workflows, { apis: apiNames(doc['x-svc']) });
  checkPipelines(problems, doc.pipelines);
  checkRegistry(problems, doc.registry);
  checkServices(problems, doc.services);
  checkEnvironments(problems, doc.environments, doc.pipelines);
  return { errors: problems.list, warnings: problems.warnings };
}
