import { Invalid } from '../../core/errors.ts';
import type { ManagedModelRequest, ManagedModelResolution, ManagedModels } from '../../core/ports/inference.ts';
import type { Credentials } from './credentials.ts';
import type { ModelResolver } from './resolution.ts';

/**
 * `managed/<name>` for a job's harness. A CLI that speaks chat completions is pointed at this
 * proxy with the job token as its key: it never holds a provider key, and every call lands on the
 * attempt's receipt. A CLI that speaks Anthropic messages (which the proxy does not serve) gets
 * the Anthropic target's own base URL and key directly; an OpenAI-compatible target cannot serve it (422).
 */
export class ManagedModelResolver implements ManagedModels {
  constructor(
    private readonly models: ModelResolver,
    private readonly credentials: Credentials,
    /** The proxy's base URL as jobs reach it (ends in /inference/v1). */
    private readonly proxyUrl: () => string,
  ) {}

  async resolve(request: ManagedModelRequest): Promise<ManagedModelResolution> {
    const resolved = await this.models.resolve(request.model, { orgId: request.orgId, projectId: request.projectId });
    if (request.speaks === 'openai') {
      const baseUrl = this.proxyUrl();
      return {
        model: request.model,
        provider: 'openai',
        baseUrl,
        apiKey: request.jobToken,
        via: 'proxy',
        env: { OPENAI_BASE_URL: baseUrl, OPENAI_API_KEY: request.jobToken },
        secrets: [request.jobToken],
      };
    }
    const { target } = resolved;
    if (target.kind !== 'anthropic') {
      throw new Invalid(`${request.model} is served by inference target ${target.name} (${target.kind}); a harness speaking Anthropic messages cannot use it`);
    }
    const key = (await this.credentials.value(target.credential_secret, target.org_id, `inference target ${target.name}`)) ?? '';
    return {
      model: resolved.upstreamModel,
      provider: 'anthropic',
      baseUrl: target.base_url,
      apiKey: key,
      via: 'direct',
      env: { ANTHROPIC_BASE_URL: target.base_url, ...(key ? { ANTHROPIC_API_KEY: key } : {}) },
      secrets: key ? [key] : [],
    };
  }
}
