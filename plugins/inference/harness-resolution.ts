import { Invalid } from '../../core/errors.ts';
import {
  GATEWAY_PROTOCOLS,
  type GatewayProtocol,
  type ManagedModelRequest,
  type ManagedModelResolution,
  type ManagedModels,
} from '../../core/ports/inference.ts';
import type { ModelResolver } from './resolution.ts';

/** Where each protocol's CLI is pointed (relative to the gateway's base, `<server>/inference`) and the variables it reads. */
const ENDPOINTS: Record<GatewayProtocol, { path: string; env: (baseUrl: string, key: string) => Record<string, string> }> = {
  // Claude Code calls <ANTHROPIC_BASE_URL>/v1/messages and sends ANTHROPIC_API_KEY as x-api-key.
  anthropic: { path: '', env: (baseUrl, key) => ({ ANTHROPIC_BASE_URL: baseUrl, ANTHROPIC_API_KEY: key }) },
  // Codex and other OpenAI clients call <OPENAI_BASE_URL>/responses or /chat/completions with a bearer key.
  responses: { path: '/v1', env: (baseUrl, key) => ({ OPENAI_BASE_URL: baseUrl, OPENAI_API_KEY: key }) },
  chat: { path: '/v1', env: (baseUrl, key) => ({ OPENAI_BASE_URL: baseUrl, OPENAI_API_KEY: key }) },
  // Gemini clients call <base>/v1beta/models/<model>:generateContent with x-goog-api-key.
  gemini: { path: '', env: (baseUrl, key) => ({ GOOGLE_GEMINI_BASE_URL: baseUrl, GEMINI_API_KEY: key }) },
};

/**
 * `managed/<name>` for a job's harness: whatever protocol its CLI speaks, it is pointed at svc's
 * model gateway for that protocol with the job token as its key. It never holds a provider key,
 * and every call lands on the attempt's receipt and is checked against the job's budget; the
 * gateway translates when the target speaks another protocol (docs/inference.md).
 */
export class ManagedModelResolver implements ManagedModels {
  constructor(
    private readonly models: ModelResolver,
    /** The gateway's base URL as jobs reach it (ends in /inference). */
    private readonly gatewayUrl: () => string,
  ) {}

  async resolve(request: ManagedModelRequest): Promise<ManagedModelResolution> {
    // 404 for a model the project may not use, before anything is handed out.
    await this.models.resolve(request.model, { orgId: request.orgId, projectId: request.projectId });
    const protocol: GatewayProtocol | undefined = request.speaks === 'openai' ? 'chat' : GATEWAY_PROTOCOLS.find((p) => p === request.speaks);
    if (!protocol)
      throw new Invalid(`a harness speaking ${String(request.speaks)} cannot use ${request.model}: the gateway speaks ${GATEWAY_PROTOCOLS.join(', ')}`);
    const endpoint = ENDPOINTS[protocol];
    const baseUrl = `${this.gatewayUrl()}${endpoint.path}`;
    return {
      model: request.model,
      protocol,
      provider: protocol === 'anthropic' ? 'anthropic' : 'openai',
      baseUrl,
      apiKey: request.jobToken,
      via: 'proxy',
      env: endpoint.env(baseUrl, request.jobToken),
      secrets: [request.jobToken],
    };
  }
}
