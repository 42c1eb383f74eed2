import { inject, injectable } from '../../core/di.ts';
import { isManagedModel, MANAGED_PREFIX } from '../../core/ports/inference.ts';
import { InferenceRepository, type ModelWithTarget, type TargetRow } from './repository.ts';
import { usableBy } from './managed-models.ts';
import { NotFound } from '../../core/errors.ts';
import type { CallerScope } from './scopes.ts';

/** Where a requested model goes: a target, the model id the upstream knows, and the catalog entry when it was a managed one. */
export interface ResolvedModel {
  requested: string;
  target: TargetRow;
  upstreamModel: string;
  managed: ModelWithTarget | null;
}

const unknown = (model: string) =>
  new NotFound(`model ${model} not found: not a managed model (managed/<name>), a target's model (<target>/<model>) or a model an inference target allows`);

/**
 * Resolves a model name in the caller's scope (its org's entries before the system's):
 * `managed/<name>` through the catalog (only for projects the entry allows), `<target>/<model>`
 * on that target (within its allowed models, when it lists any), or a bare model id on the first
 * target that lists it. Anything else, and anything the caller may not use, is 404 naming the model.
 */
@injectable()
export class ModelResolver {
  constructor(@inject(InferenceRepository) private readonly repo: InferenceRepository) {}

  async resolve(model: string, scope: CallerScope): Promise<ResolvedModel> {
    if (isManagedModel(model)) {
      const entry = await this.repo.modelNamed(model.slice(MANAGED_PREFIX.length), scope.orgId);
      if (!entry || !usableBy(entry, scope.projectId)) throw new NotFound(`model ${model} not found`);
      return { requested: model, target: entry.target, upstreamModel: entry.upstream_model, managed: entry };
    }
    const slash = model.indexOf('/');
    if (slash > 0) {
      const target = await this.repo.targetNamed(model.slice(0, slash), scope.orgId);
      const upstreamModel = model.slice(slash + 1);
      if (target) {
        if (upstreamModel === '' || (target.allowed_models.length && !target.allowed_models.includes(upstreamModel))) {
          throw new NotFound(`model ${model} not found: inference target ${target.name} allows ${target.allowed_models.join(', ')}`);
        }
        return { requested: model, target, upstreamModel, managed: null };
      }
    }
    const [target] = await this.repo.targetsAllowing(model, scope.orgId);
    if (!target) throw unknown(model);
    return { requested: model, target, upstreamModel: model, managed: null };
  }
}
