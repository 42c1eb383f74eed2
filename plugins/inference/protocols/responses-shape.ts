import type { TokenUsage } from '../providers/types.ts';
import type { ProtocolCall } from './types.ts';

type Item = Record<string, any>;

/** Responses usage from disjoint counts: input includes cached tokens, output includes reasoning. */
export const responsesUsageOf = (u: TokenUsage) => {
  const input = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: u.cache_read_tokens },
    output_tokens: u.output_tokens,
    output_tokens_details: { reasoning_tokens: u.reasoning_tokens },
    total_tokens: input + u.output_tokens,
  };
};

/** The names of the request's custom (free-form) tools, whose calls go back as custom_tool_call items. */
export const customTools = (body: Item): Set<string> =>
  new Set((Array.isArray(body.tools) ? body.tools : []).filter((t: Item) => t.type === 'custom').map((t: Item) => String(t.name)));

export const STATUS_OF_FINISH = (finish: unknown) => (finish === 'length' ? 'incomplete' : 'completed');
const customInput = (args: string): string => {
  try {
    const parsed = JSON.parse(args);
    return typeof parsed?.input === 'string' ? parsed.input : args;
  } catch {
    return args;
  }
};

/** The items one chat answer makes, and the response around them. */
export class ResponseShape {
  readonly id: string;
  readonly createdAt = Math.floor(Date.now() / 1000);
  readonly custom: Set<string>;

  constructor(
    chatId: unknown,
    readonly model: string,
    readonly call: ProtocolCall,
  ) {
    this.id = `resp_${String(chatId ?? '').replace(/^chatcmpl-/, '') || Date.now().toString(36)}`;
    this.custom = customTools(call.body as Item);
  }

  messageItem(text: string, status = 'completed'): Item {
    return {
      id: `msg_${this.id.slice(5)}`,
      type: 'message',
      status,
      role: 'assistant',
      content: status === 'completed' ? [{ type: 'output_text', text, annotations: [] }] : [],
    };
  }

  callItem(index: number, callId: string, name: string, args: string, status = 'completed'): Item {
    if (this.custom.has(name))
      return { id: `ctc_${this.id.slice(5)}_${index}`, type: 'custom_tool_call', status, call_id: callId, name, input: customInput(args) };
    return { id: `fc_${this.id.slice(5)}_${index}`, type: 'function_call', status, call_id: callId, name, arguments: args };
  }

  response(status: string, output: Item[], usage: TokenUsage | null, finish: unknown = null): Item {
    const body = this.call.body as Item;
    return {
      id: this.id,
      object: 'response',
      created_at: this.createdAt,
      status,
      model: this.model,
      output,
      ...(status === 'incomplete'
        ? { incomplete_details: { reason: finish === 'length' ? 'max_output_tokens' : 'content_filter' } }
        : { incomplete_details: null }),
      error: null,
      instructions: body.instructions ?? null,
      max_output_tokens: body.max_output_tokens ?? null,
      parallel_tool_calls: body.parallel_tool_calls ?? true,
      tool_choice: body.tool_choice ?? 'auto',
      tools: body.tools ?? [],
      store: false,
      usage: usage ? responsesUsageOf(usage) : null,
    };
  }
}

/** A Responses event frame: `event:` and `data:` with the same type. */
export const responsesFrame = (type: string, data: Record<string, unknown>): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
