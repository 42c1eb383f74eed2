import { Invalid } from '../../core/errors.ts';
import {
  describeInput,
  declaredNames,
  describeUndeclared,
  inputDefaults,
  missingInputs,
  undeclaredInputs,
  type PipelineInputDeclarations,
} from '../../domain/manifest/pipeline-inputs.ts';
import type { PipelineDefinition } from '../../domain/manifest/types.ts';

/**
 * Who gave a run's `inputs`: a `caller` of the route (the API, the CLI, the console), who names
 * inputs by hand, so one the pipeline does not declare is a typo (refused); or the `platform` (a
 * trigger's event payload, a deploy's release fields), whose fields are not written for the
 * pipeline and pass through.
 */
export type InputsFrom = 'caller' | 'platform';

/**
 * A run's inputs (docs/pipelines.md, "Declared inputs"): the declared defaults, beneath the
 * environment's pipeline_inputs, beneath the given ones. 422 naming the required inputs that are
 * still missing, and a caller's inputs the pipeline does not declare; both at once when both.
 */
export function runInputs(
  pipelineName: string,
  pipeline: PipelineDefinition,
  base: Record<string, unknown>,
  given: Record<string, unknown>,
  from: InputsFrom,
): Record<string, unknown> {
  const declared: PipelineInputDeclarations = pipeline.inputs ?? {};
  const inputs = { ...inputDefaults(declared), ...base, ...given };
  const missing = missingInputs(declared, inputs).sort();
  const undeclared = from === 'caller' && pipeline.inputs !== undefined ? undeclaredInputs(declared, given) : [];
  if (missing.length === 0 && undeclared.length === 0) return inputs;
  const reasons: string[] = [];
  const many = (names: string[], one: string, more: string) => (names.length > 1 ? more : one);
  if (missing.length > 0)
    reasons.push(
      `required ${many(missing, 'input', 'inputs')} ${missing.map((n) => describeInput(declared, n)).join(', ')} ${many(missing, 'was', 'were')} not given: pass ${many(missing, 'it', 'them')} in inputs (svc pipeline run ${pipelineName} --input NAME=VALUE)`,
    );
  if (undeclared.length > 0)
    reasons.push(
      `pipeline ${pipelineName} declares no ${many(undeclared, 'input', 'inputs')} ${undeclared.map((n) => describeUndeclared(declared, n)).join(', ')}: ${declaredNames(declared)}`,
    );
  throw new Invalid(reasons.join('; '), {
    ...(missing.length > 0 ? { missing_inputs: missing } : {}),
    ...(undeclared.length > 0 ? { undeclared_inputs: undeclared } : {}),
  });
}
