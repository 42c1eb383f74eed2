import { BadRequest } from '../../../core/errors.ts';
import { dataFrame } from '../providers/sse.ts';
import type { ChatRequest, TokenUsage } from '../providers/types.ts';
import type { ChatStreamWriter, ClientProtocol, ProtocolCall } from './types.ts';

type Part = Record<string, any>;
type ChatMessage = Record<string, any>;

const STATUS_NAMES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ABORTED',
  413: 'INVALID_ARGUMENT',
  422: 'FAILED_PRECONDITION',
  429: 'RESOURCE_EXHAUSTED',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};
/** Google's status name for an HTTP status (what Gemini clients show and decide retries by). */
export const googleStatus = (status: number): string => STATUS_NAMES[status] ?? (status >= 500 ? 'INTERNAL' : 'UNKNOWN');

const FINISH: Record<string, string> = { stop: 'STOP', length: 'MAX_TOKENS', tool_calls: 'STOP', function_call: 'STOP', content_filter: 'SAFETY' };
const finishReason = (finish: unknown): string => (typeof finish === 'string' ? (FINISH[finish] ?? 'STOP') : 'STOP');

/** Gemini usage from disjoint counts: the prompt count includes cached tokens; thoughts are counted apart from candidates. */
export const geminiUsageOf = (u: TokenUsage) => {
  const prompt = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens;
  const thoughts = Math.min(u.reasoning_tokens, u.output_tokens);
  return {
    promptTokenCount: prompt,
    candidatesTokenCount: u.output_tokens - thoughts,
    totalTokenCount: prompt + u.output_tokens,
    ...(u.cache_read_tokens ? { cachedContentTokenCount: u.cache_read_tokens } : {}),
    ...(thoughts ? { thoughtsTokenCount: thoughts } : {}),
  };
};

/** Gemini's OpenAPI-style schemas (`type: "OBJECT"`) as JSON Schema (`type: "object"`). */
function jsonSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(jsonSchema);
  if (!schema || typeof schema !== 'object') return schema;
  return Object.fromEntries(
    Object.entries(schema as Record<string, unknown>).map(([k, v]) => [k, k === 'type' && typeof v === 'string' ? v.toLowerCase() : jsonSchema(v)]),
  );
}

const textOf = (parts: Part[]): string =>
  parts
    .filter((p) => typeof p.text === 'string' && !p.thought)
    .map((p) => p.text)
    .join('');

/** A generateContent request as chat completions; calls get ids (`call_<content>_<part>` unless Gemini gave one) that their responses find by name. */
export function geminiToChat(call: ProtocolCall): ChatRequest {
  const body = call.body as Part;
  const messages: ChatMessage[] = [];
  const system = typeof body.systemInstruction === 'string' ? body.systemInstruction : textOf(body.systemInstruction?.parts ?? []);
  if (system) messages.push({ role: 'system', content: system });
  let pending: { id: string; name: string }[] = [];
  (body.contents as Part[]).forEach((content, i) => {
    const parts: Part[] = Array.isArray(content.parts) ? content.parts : [];
    if (content.role === 'model') {
      const calls = parts
        .map((p, j) => ({ p, j }))
        .filter(({ p }) => p.functionCall)
        .map(({ p, j }) => ({ id: String(p.functionCall.id ?? `call_${i}_${j}`), name: String(p.functionCall.name), args: p.functionCall.args ?? {} }));
      pending = calls.map(({ id, name }) => ({ id, name }));
      const text = textOf(parts);
      messages.push({
        role: 'assistant',
        content: text === '' ? null : text,
        ...(calls.length
          ? { tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args) } })) }
          : {}),
      });
      return;
    }
    if (content.role !== undefined && content.role !== 'user' && content.role !== 'function') throw new BadRequest(`contents[${i}].role must be user or model`);
    const userParts: Record<string, unknown>[] = [];
    parts.forEach((p, j) => {
      const field = `contents[${i}].parts[${j}]`;
      if (p.functionResponse) {
        const name = String(p.functionResponse.name);
        const match = p.functionResponse.id ? { id: String(p.functionResponse.id) } : pending.find((c) => c.name === name);
        if (match) pending = pending.filter((c) => c.id !== match.id);
        messages.push({ role: 'tool', tool_call_id: match?.id ?? `call_${name}`, content: JSON.stringify(p.functionResponse.response ?? {}) });
      } else if (typeof p.text === 'string') {
        if (!p.thought) userParts.push({ type: 'text', text: p.text });
      } else if (p.inlineData && String(p.inlineData.mimeType).startsWith('image/')) {
        userParts.push({ type: 'image_url', image_url: { url: `data:${p.inlineData.mimeType};base64,${p.inlineData.data}` } });
      } else
        throw new BadRequest(
          `${field} (${Object.keys(p).join(', ')}) cannot be sent to this target: text, images, functionCall and functionResponse parts can`,
        );
    });
    if (userParts.length) {
      const onlyText = userParts.every((p) => p.type === 'text');
      messages.push({ role: 'user', content: onlyText ? userParts.map((p) => p.text).join('') : userParts });
    }
  });
  const chat: ChatRequest = { model: call.model, messages, stream: call.stream };
  const config = (body.generationConfig ?? {}) as Part;
  if (config.maxOutputTokens) chat.max_tokens = config.maxOutputTokens;
  if (config.temperature !== undefined) chat.temperature = config.temperature;
  if (config.topP !== undefined) chat.top_p = config.topP;
  if (Array.isArray(config.stopSequences) && config.stopSequences.length) chat.stop = config.stopSequences;
  const declarations = (Array.isArray(body.tools) ? body.tools : []).flatMap((t: Part) =>
    Array.isArray(t.functionDeclarations) ? t.functionDeclarations : [],
  );
  if (declarations.length) {
    chat.tools = declarations.map((d: Part) => ({
      type: 'function',
      function: {
        name: d.name,
        ...(d.description ? { description: d.description } : {}),
        parameters: d.parametersJsonSchema ?? jsonSchema(d.parameters) ?? { type: 'object', properties: {} },
      },
    }));
    const mode = body.toolConfig?.functionCallingConfig?.mode;
    const allowed = body.toolConfig?.functionCallingConfig?.allowedFunctionNames;
    if (mode === 'NONE') chat.tool_choice = 'none';
    else if (mode === 'ANY')
      chat.tool_choice = Array.isArray(allowed) && allowed.length === 1 ? { type: 'function', function: { name: allowed[0] } } : 'required';
    else if (mode === 'AUTO') chat.tool_choice = 'auto';
  }
  return chat;
}

function callArgs(args: unknown): unknown {
  if (typeof args !== 'string' || args === '') return {};
  try {
    return JSON.parse(args);
  } catch {
    return { arguments: args };
  }
}

const callParts = (calls: { id: string; name: string; args: string }[]): Part[] =>
  calls.map((c) => ({ functionCall: { id: c.id, name: c.name, args: callArgs(c.args) } }));

/** A chat.completion as a GenerateContentResponse. */
export function chatToGemini(chat: Record<string, any>, usage: TokenUsage, call: ProtocolCall): Part {
  const choice = chat.choices?.[0] ?? {};
  const message = choice.message ?? {};
  const parts: Part[] = [];
  if (typeof message.content === 'string' && message.content !== '') parts.push({ text: message.content });
  const calls = (Array.isArray(message.tool_calls) ? message.tool_calls : []).map((c: Part) => ({
    id: String(c.id),
    name: String(c.function?.name),
    args: String(c.function?.arguments ?? ''),
  }));
  parts.push(...callParts(calls));
  return {
    candidates: [{ content: { role: 'model', parts }, finishReason: finishReason(choice.finish_reason), index: 0 }],
    usageMetadata: geminiUsageOf(usage),
    modelVersion: chat.model ?? call.model,
    responseId: String(chat.id ?? ''),
  };
}

/**
 * Chat-completion chunks as Gemini's server-sent stream: a GenerateContentResponse per text delta,
 * and a last one with the function calls (whole: Gemini sends them so), the finish reason and the
 * upstream's usage.
 */
export class ChatToGeminiStream implements ChatStreamWriter {
  private readonly calls = new Map<number, { id: string; name: string; args: string }>();
  private finish: unknown = null;
  private id = '';
  private model: string;

  constructor(call: ProtocolCall) {
    this.model = call.model;
  }

  chunk(c: Record<string, any>): string[] {
    if (c.id) this.id = String(c.id);
    if (c.model) this.model = String(c.model);
    const choice = c.choices?.[0];
    const delta = choice?.delta ?? {};
    for (const t of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
      const index = typeof t.index === 'number' ? t.index : 0;
      const open = this.calls.get(index) ?? { id: String(t.id ?? `call_${index}`), name: '', args: '' };
      if (t.function?.name) open.name = String(t.function.name);
      if (typeof t.function?.arguments === 'string') open.args += t.function.arguments;
      this.calls.set(index, open);
    }
    if (choice?.finish_reason) this.finish = choice.finish_reason;
    if (typeof delta.content !== 'string' || delta.content === '') return [];
    return [dataFrame(this.response([{ text: delta.content }]))];
  }

  end(usage: TokenUsage): string[] {
    const last = this.response(callParts([...this.calls.values()]));
    last.candidates[0].finishReason = finishReason(this.finish);
    last.usageMetadata = geminiUsageOf(usage);
    return [dataFrame(last)];
  }

  private response(parts: Part[]): Part {
    return { candidates: [{ content: { role: 'model', parts }, index: 0 }], modelVersion: this.model, responseId: this.id };
  }
}

const unsupportedNative = (): never => {
  throw new Error('the Gemini protocol has no native target kind');
};

/** Gemini generateContent / streamGenerateContent: translated through chat completions for every target kind. */
export const geminiProtocol: ClientProtocol = {
  name: 'gemini',
  native: null,
  nativeRequest: unsupportedNative,
  nativeUsage: unsupportedNative,
  nativeStream: unsupportedNative,
  toChat: geminiToChat,
  fromChat: chatToGemini,
  chatStream: (call) => new ChatToGeminiStream(call),
  errorBody: (status, message) => ({ error: { code: status, message, status: googleStatus(status) } }),
  streamError: (message, _type, status) => dataFrame({ error: { code: status, message, status: googleStatus(status) } }),
};
