import type { Principal } from '../../core/auth/principal.ts';
import { UpstreamFailed } from '../../core/errors.ts';
import type { CompletionAnswer, CompletionRequest, ModelCompletions } from '../../core/ports/inference.ts';
import type { InferenceGateway } from './proxy.ts';
import type { Scopes } from './scopes.ts';

/** The ModelCompletions port: the chat-completions path of the gateway, answered as text. */
export class GatewayCompletions implements ModelCompletions {
  constructor(
    private readonly gateway: InferenceGateway,
    private readonly scopes: Scopes,
  ) {}

  async complete(principal: Principal, where: { orgId: string; projectId: string | null }, request: CompletionRequest): Promise<CompletionAnswer> {
    const scope = await this.scopes.of(principal, where.projectId ? { projectId: where.projectId } : { orgId: where.orgId }, 'inference:use');
    const body = { model: request.model, messages: request.messages, ...(request.max_tokens ? { max_tokens: request.max_tokens } : {}), stream: false };
    const reply = await this.gateway.complete(principal, scope, body, new AbortController().signal);
    if (reply.kind !== 'json') throw new UpstreamFailed(`model ${request.model} answered a stream to a call that asked for none`);
    const answer = reply.body as {
      model?: string;
      choices?: { message?: { content?: unknown } }[];
      usage?: { prompt_tokens?: number; completion_tokens?: number };
      error?: { message?: string };
    };
    if (reply.status !== 200)
      throw new UpstreamFailed(`model ${request.model} answered ${reply.status}: ${answer?.error?.message ?? JSON.stringify(answer).slice(0, 300)}`);
    const text = answer.choices?.[0]?.message?.content;
    if (typeof text !== 'string' || text.trim() === '') throw new UpstreamFailed(`model ${request.model} answered no text`);
    return {
      model: answer.model ?? request.model,
      text,
      usage: { input_tokens: answer.usage?.prompt_tokens ?? 0, output_tokens: answer.usage?.completion_tokens ?? 0 },
    };
  }
}
