import type { ManifestProblem } from './types.ts';
import { Problems, kindOf, isObject } from './problems.ts';
import { checkPipelines, checkWorkflows } from './validate-flows.ts';
import { apiNames, checkSvcExtension } from './validate-xsvc.ts';
import { checkEnvironments, checkRegistry, checkServices } from './validate-deploy.ts';

/**
 * Every problem in a manifest document (as YAML gave it), each with its path. An empty list means
 * the document can be normalized (`normalizeManifest`).
 */
export function validateManifest(doc: unknown): ManifestProblem[] {
  const problems = new Problems();
  if (!isObject(doc)) {
    problems.add('', `the manifest must be a mapping, got ${kindOf(doc)}`);
    return problems.list;
  }
  checkSvcExtension(problems, doc['x-svc']);
  checkWorkflows(problems, doc.workflows, { apis: apiNames(doc['x-svc']) });
  checkPipelines(problems, doc.pipelines);
  checkRegistry(problems, doc.registry);
  checkServices(problems, doc.services);
  checkEnvironments(problems, doc.environments, doc.pipelines);
  return problems.list;
}
