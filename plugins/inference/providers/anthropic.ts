import Boom from '@hapi/boom';
import { AnthropicStream, anthropicUsage, finishReason } from './anthropic-stream.ts';
import type { ChatRequest, ProviderAdapter } from './types.ts';

/** Anthropic requires max_tokens; a chat-completions request may leave it out. */
export const DEFAULT_MAX_TOKENS = 4096;
export const ANTHROPIC_VERSION = '2023-06-01';

type Block = Record<string, unknown>;
type Message = { role: 'user' | 'assistant'; content: Block[] };

/** Text of a chat-completions content value (a string, or parts of which the text ones count). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content.map((p) => (p && typeof p === 'object' && (p as Block).type === 'text' ? String((p as Block).text ?? '') : '')).join('');
  return '';
}

function contentBlocks(content: unknown): Block[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) return [];
  return content.flatMap((part: Block): Block[] => {
    if (part?.type === 'text') return [{ type: 'text', text: String(part.text ?? '') }];
    const url = (part?.image_url as { url?: string } | undefined)?.url;
    const inline = typeof url === 'string' ? /^data:([^;]+);base64,(.*)$/s.exec(url) : null;
    if (part?.type === 'image_url' && inline) return [{ type: 'image', source: { type: 'base64', media_type: inline[1], data: inline[2] } }];
    if (part?.type === 'image_url' && typeof url === 'string') return [{ type: 'image', source: { type: 'url', url } }];
    throw Boom.badRequest(`message content part of type ${String(part?.type)} cannot be sent to an Anthropic target`);
  });
}

function toolInput(args: unknown): unknown {
  if (typeof args !== 'string' || args === '') return {};
  try {
    return JSON.parse(args);
  } catch {
    throw Boom.badRequest('tool_calls[].function.arguments must be a JSON object for an Anthropic target');
  }
}

/** Adds blocks to the conversation, merging into the last message when the role repeats (Anthropic wants turns to alternate). */
function append(messages: Message[], role: Message['role'], blocks: Block[]): void {
  const last = messages[messages.length - 1];
  if (last && last.role === role) last.content.push(...blocks);
  else messages.push({ role, content: blocks });
}

/** Chat-completions messages, tools and options as an Anthropic messages request. */
export function toMessagesRequest(request: ChatRequest, upstreamModel: string): Record<string, unknown> {
  const system: string[] = [];
  const messages: Message[] = [];
  for (const m of request.messages) {
    const role = m.role;
    if (role === 'system' || role === 'developer') system.push(textOf(m.content));
    else if (role === 'user') append(messages, 'user', contentBlocks(m.content));
    else if (role === 'assistant') {
      const calls = (Array.isArray(m.tool_calls) ? m.tool_calls : []) as { id: string; function: { name: string; arguments?: string } }[];
      append(messages, 'assistant', [
        ...contentBlocks(m.content),
        ...calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.function?.name, input: toolInput(c.function?.arguments) })),
      ]);
    } else if (role === 'tool') {
      append(messages, 'user', [{ type: 'tool_result', tool_use_id: m.tool_call_id, content: textOf(m.content) }]);
    } else throw Boom.badRequest(`message role ${String(role)} is not supported`);
  }
  const out: Record<string, unknown> = {
    model: upstreamModel,
    messages,
    max_tokens: request.max_completion_tokens ?? request.max_tokens ?? DEFAULT_MAX_TOKENS,
  };
  if (system.length) out.system = system.join('\n\n');
  if (request.stream) out.stream = true;
  for (const key of ['temperature', 'top_p'] as const) if (request[key] !== undefined) out[key] = request[key];
  if (request.stop !== undefined && request.stop !== null) out.stop_sequences = Array.isArray(request.stop) ? request.stop : [request.stop];
  if (Array.isArray(request.tools)) {
    out.tools = (request.tools as { function: { name: string; description?: string; parameters?: unknown } }[]).map((t) => ({
      name: t.function?.name,
      ...(t.function?.description ? { description: t.function.description } : {}),
      input_schema: t.function?.parameters ?? { type: 'object', properties: {} },
    }));
  }
  const choice = request.tool_choice as string | { function?: { name?: string } } | undefined;
  if (choice === 'auto') out.tool_choice = { type: 'auto' };
  else if (choice === 'required') out.tool_choice = { type: 'any' };
  else if (choice === 'none') out.tool_choice = { type: 'none' };
  else if (choice && typeof choice === 'object' && choice.function?.name) out.tool_choice = { type: 'tool', name: choice.function.name };
  return out;
}

/** An Anthropic message as a chat.completion. */
export function toChatCompletion(body: Record<string, any>): Record<string, unknown> {
  const content: Block[] = Array.isArray(body?.content) ? body.content : [];
  const text = content
    .filter((b) => b.type === 'text')
    .map((b) => String(b.text ?? ''))
    .join('');
  const calls = content
    .filter((b) => b.type === 'tool_use')
    .map((b) => ({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } }));
  const usage = anthropicUsage(body?.usage);
  return {
    id: body?.id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: body?.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: text === '' && calls.length ? null : text, ...(calls.length ? { tool_calls: calls } : {}) },
        finish_reason: finishReason(body?.stop_reason),
      },
    ],
    usage: {
      prompt_tokens: usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
      completion_tokens: usage.output_tokens,
      total_tokens: usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens + usage.output_tokens,
      prompt_tokens_details: { cached_tokens: usage.cache_read_tokens },
    },
  };
}

export const anthropicAdapter: ProviderAdapter = {
  kind: 'anthropic',
  description: 'Anthropic messages (POST {base_url}/v1/messages, GET {base_url}/v1/models; x-api-key), translated to and from chat completions',
  headers: (apiKey) => ({ 'anthropic-version': ANTHROPIC_VERSION, ...(apiKey ? { 'x-api-key': apiKey } : {}) }),
  chatPath: '/v1/messages',
  modelsPath: '/v1/models',
  modelIds: (body) => ((body as { data?: { id?: unknown }[] })?.data ?? []).map((m) => m.id).filter((id): id is string => typeof id === 'string'),
  chatRequest: toMessagesRequest,
  chatResponse: (body) => ({ body: toChatCompletion(body as Record<string, any>), usage: anthropicUsage((body as { usage?: unknown })?.usage) }),
  /** Anthropic's `{type: 'error', error: {type, message}}` in the chat-completions error shape. */
  errorBody(_status, body) {
    const error = (body as { error?: { type?: string; message?: string } } | null)?.error;
    if (!error || typeof error !== 'object') return body;
    return { error: { message: error.message ?? 'upstream error', type: error.type ?? 'upstream_error', code: null } };
  },
  stream: (request) => new AnthropicStream(request.stream_options?.include_usage === true),
};
