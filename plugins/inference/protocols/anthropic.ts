import { BadRequest } from '../../../core/errors.ts';
import { anthropicUsage } from '../providers/anthropic-stream.ts';
import type { ChatRequest, TokenUsage } from '../providers/types.ts';
import { AnthropicPassThrough, anthropicFrame, anthropicUsageOf } from './anthropic-events.ts';
import type { ChatStreamWriter, ClientProtocol, ProtocolCall } from './types.ts';

type Block = Record<string, any>;
type ChatMessage = Record<string, unknown>;

const STOP: Record<string, string> = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use', function_call: 'tool_use', content_filter: 'refusal' };
export const stopReason = (finish: unknown): string => (typeof finish === 'string' ? (STOP[finish] ?? 'end_turn') : 'end_turn');

/** Anthropic's error type for a status (what its SDKs and Claude Code show and decide retries by). */
export function anthropicErrorType(status: number): string {
  if (status === 400 || status === 422) return 'invalid_request_error';
  if (status === 401) return 'authentication_error';
  if (status === 402 || status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 504) return 'timeout_error';
  if (status === 529) return 'overloaded_error';
  return 'api_error';
}

/** Text of an Anthropic content value (a string, or blocks of which the text ones count). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((b: Block) => (b?.type === 'text' ? String(b.text ?? '') : '')).join('');
}

function imagePart(block: Block, field: string): Record<string, unknown> {
  const source = block.source ?? {};
  if (source.type === 'base64') return { type: 'image_url', image_url: { url: `data:${source.media_type};base64,${source.data}` } };
  if (source.type === 'url') return { type: 'image_url', image_url: { url: source.url } };
  throw new BadRequest(`${field}.source.type ${String(source.type)} cannot be sent to a chat-completions target`);
}

/** One Anthropic message as chat messages: tool results become `tool` messages (first, as chat wants them right after the call). */
function chatMessages(m: Block, i: number): ChatMessage[] {
  const field = `messages[${i}]`;
  if (m.role !== 'user' && m.role !== 'assistant' && m.role !== 'system') throw new BadRequest(`${field}.role must be user, assistant or system`);
  const blocks: Block[] = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : Array.isArray(m.content) ? m.content : [];
  // Claude Code sends system messages between the turns too (instructions that arrive mid-conversation).
  if (m.role === 'system') return [{ role: 'system', content: textOf(blocks) }];
  const parts: Record<string, unknown>[] = [];
  const calls: Record<string, unknown>[] = [];
  const results: ChatMessage[] = [];
  blocks.forEach((b, j) => {
    const at = `${field}.content[${j}]`;
    switch (b?.type) {
      case 'text':
        parts.push({ type: 'text', text: String(b.text ?? '') });
        break;
      case 'image':
        parts.push(imagePart(b, at));
        break;
      case 'tool_use':
        calls.push({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } });
        break;
      case 'tool_result': {
        const text = textOf(b.content);
        results.push({ role: 'tool', tool_call_id: b.tool_use_id, content: b.is_error ? `Error: ${text}` : text });
        break;
      }
      case 'thinking':
      case 'redacted_thinking':
        break; // a chat-completions upstream cannot take another model's reasoning back
      default:
        throw new BadRequest(`${at}.type ${String(b?.type)} cannot be sent to a chat-completions target`);
    }
  });
  const onlyText = parts.every((p) => p.type === 'text');
  const content = onlyText ? parts.map((p) => p.text).join('') : parts;
  if (m.role === 'assistant') return [{ role: 'assistant', content: content === '' ? null : content, ...(calls.length ? { tool_calls: calls } : {}) }];
  return [...results, ...(parts.length ? [{ role: 'user', content }] : [])];
}

/** An Anthropic messages request as chat completions (docs/inference.md, "Translation"). */
export function messagesToChat(call: ProtocolCall): ChatRequest {
  const body = call.body as Block;
  const messages: ChatMessage[] = [];
  // System blocks are separate paragraphs (Claude Code sends several, some marked for caching).
  const system =
    typeof body.system === 'string'
      ? body.system
      : (Array.isArray(body.system) ? (body.system as Block[]) : [])
          .map((b) => textOf([b]))
          .filter(Boolean)
          .join('\n\n');
  if (system) messages.push({ role: 'system', content: system });
  (body.messages as Block[]).forEach((m, i) => messages.push(...chatMessages(m, i)));
  const chat: ChatRequest = { model: call.model, messages, stream: call.stream, max_tokens: body.max_tokens };
  for (const key of ['temperature', 'top_p'] as const) if (body[key] !== undefined) chat[key] = body[key];
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length) chat.stop = body.stop_sequences;
  const tools = Array.isArray(body.tools) ? (body.tools as Block[]).filter((t) => t.input_schema) : [];
  if (tools.length)
    chat.tools = tools.map((t) => ({
      type: 'function',
      function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.input_schema },
    }));
  const choice = body.tool_choice as Block | undefined;
  if (choice?.type === 'auto') chat.tool_choice = 'auto';
  else if (choice?.type === 'any') chat.tool_choice = 'required';
  else if (choice?.type === 'none') chat.tool_choice = 'none';
  else if (choice?.type === 'tool') chat.tool_choice = { type: 'function', function: { name: choice.name } };
  if (choice?.disable_parallel_tool_use === true && tools.length) chat.parallel_tool_calls = false;
  return chat;
}

function toolInput(args: unknown): unknown {
  if (typeof args !== 'string' || args === '') return {};
  try {
    return JSON.parse(args);
  } catch {
    return { arguments: args }; // a model that wrote broken JSON: the caller still sees what it wrote
  }
}

/** A chat.completion as an Anthropic message. */
export function chatToMessage(chat: Record<string, any>, usage: TokenUsage, call: ProtocolCall): Record<string, unknown> {
  const choice = chat.choices?.[0] ?? {};
  const message = choice.message ?? {};
  const content: Block[] = [];
  const text = typeof message.content === 'string' ? message.content : textOf(message.content);
  if (text) content.push({ type: 'text', text });
  for (const c of Array.isArray(message.tool_calls) ? message.tool_calls : [])
    content.push({ type: 'tool_use', id: c.id, name: c.function?.name, input: toolInput(c.function?.arguments) });
  return {
    id: `msg_${String(chat.id ?? '').replace(/^chatcmpl-/, '') || Date.now().toString(36)}`,
    type: 'message',
    role: 'assistant',
    model: chat.model ?? call.model,
    content,
    stop_reason: stopReason(choice.finish_reason),
    stop_sequence: null,
    usage: anthropicUsageOf(usage),
  };
}

/**
 * Chat-completion chunks as Anthropic's event sequence: `message_start`, then for each text run or
 * tool call a `content_block_start`, its deltas (`text_delta`, `input_json_delta`) and
 * `content_block_stop`, then `message_delta` (stop reason, the upstream's usage) and `message_stop`.
 */
export class ChatToAnthropicStream implements ChatStreamWriter {
  private started = false;
  private block = -1;
  private open: 'text' | 'tool' | null = null;
  /** Chat tool-call index → Anthropic block index. */
  private readonly tools = new Map<number, number>();
  private finish: unknown = null;

  constructor(private readonly model: string) {}

  chunk(c: Record<string, any>): string[] {
    const out = this.start(c);
    const choice = c.choices?.[0];
    const delta = choice?.delta ?? {};
    if (typeof delta.content === 'string' && delta.content !== '') {
      if (this.open !== 'text') out.push(...this.openBlock('text', { type: 'text', text: '' }));
      out.push(anthropicFrame('content_block_delta', { index: this.block, delta: { type: 'text_delta', text: delta.content } }));
    }
    for (const t of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
      const index = typeof t.index === 'number' ? t.index : 0;
      if (!this.tools.has(index)) {
        out.push(...this.openBlock('tool', { type: 'tool_use', id: t.id ?? `toolu_${index}`, name: t.function?.name ?? '', input: {} }));
        this.tools.set(index, this.block);
      }
      const args = t.function?.arguments;
      if (typeof args === 'string' && args !== '')
        out.push(anthropicFrame('content_block_delta', { index: this.tools.get(index), delta: { type: 'input_json_delta', partial_json: args } }));
    }
    if (choice?.finish_reason) this.finish = choice.finish_reason;
    return out;
  }

  end(usage: TokenUsage): string[] {
    const out = this.start({});
    out.push(...this.closeBlock());
    out.push(anthropicFrame('message_delta', { delta: { stop_reason: stopReason(this.finish), stop_sequence: null }, usage: anthropicUsageOf(usage) }));
    out.push(anthropicFrame('message_stop', {}));
    return out;
  }

  private start(c: Record<string, any>): string[] {
    if (this.started) return [];
    this.started = true;
    const id = `msg_${String(c.id ?? '').replace(/^chatcmpl-/, '') || Date.now().toString(36)}`;
    const message = { id, type: 'message', role: 'assistant', model: c.model ?? this.model, content: [], stop_reason: null, stop_sequence: null };
    return [anthropicFrame('message_start', { message: { ...message, usage: { input_tokens: 0, output_tokens: 0 } } })];
  }

  private openBlock(kind: 'text' | 'tool', block: Block): string[] {
    const out = this.closeBlock();
    this.block += 1;
    this.open = kind;
    out.push(anthropicFrame('content_block_start', { index: this.block, content_block: block }));
    return out;
  }

  private closeBlock(): string[] {
    if (this.open === null) return [];
    this.open = null;
    return [anthropicFrame('content_block_stop', { index: this.block })];
  }
}

/** Anthropic messages (`POST /inference/v1/messages`): native to anthropic targets, translated for openai ones. */
export const anthropicProtocol: ClientProtocol = {
  name: 'anthropic',
  native: 'anthropic',
  nativeRequest: (call, upstreamModel) => ({ ...call.body, model: upstreamModel }),
  nativeUsage: (body) => anthropicUsage((body as { usage?: unknown })?.usage),
  nativeStream: () => new AnthropicPassThrough(),
  toChat: messagesToChat,
  fromChat: chatToMessage,
  chatStream: (call) => new ChatToAnthropicStream(call.model),
  errorBody: (status, message) => ({ type: 'error', error: { type: anthropicErrorType(status), message } }),
  streamError: (message, _type, status) => anthropicFrame('error', { error: { type: anthropicErrorType(status), message } }),
};
