import { parseJson, type WireEvent } from '../providers/sse.ts';
import { noUsage, tokenCount, type StreamTranslator, type TokenUsage } from '../providers/types.ts';
import { ResponseShape, STATUS_OF_FINISH, responsesFrame } from './responses-shape.ts';
import type { ChatStreamWriter, ProtocolCall } from './types.ts';

type Item = Record<string, any>;

interface OpenCall {
  outputIndex: number;
  callId: string;
  name: string;
  args: string;
}

/**
 * Chat-completion chunks as the Responses event stream: `response.created`, `response.in_progress`,
 * per output item `response.output_item.added`, its deltas (`response.output_text.delta`,
 * `response.function_call_arguments.delta`) and `…done` events, then `response.completed` (or
 * `response.incomplete`) with the whole response and the upstream's usage. A custom tool's call
 * comes whole at the end (its input is the chat call's `input` argument, known only once complete).
 */
export class ChatToResponsesStream implements ChatStreamWriter {
  private shape: ResponseShape | null = null;
  private seq = 0;
  private readonly output: Item[] = [];
  private text: { outputIndex: number; text: string } | null = null;
  private readonly calls = new Map<number, OpenCall>();
  private finish: unknown = null;

  constructor(private readonly call: ProtocolCall) {}

  chunk(c: Record<string, any>): string[] {
    const out = this.start(c);
    const shape = this.shape!;
    const choice = c.choices?.[0];
    const delta = choice?.delta ?? {};
    if (typeof delta.content === 'string' && delta.content !== '') {
      if (!this.text) {
        this.text = { outputIndex: this.output.length, text: '' };
        const item = shape.messageItem('', 'in_progress');
        this.output.push(item);
        out.push(this.event('response.output_item.added', { output_index: this.text.outputIndex, item }));
        out.push(
          this.event('response.content_part.added', {
            item_id: item.id,
            output_index: this.text.outputIndex,
            content_index: 0,
            part: { type: 'output_text', text: '', annotations: [] },
          }),
        );
      }
      this.text.text += delta.content;
      out.push(
        this.event('response.output_text.delta', {
          item_id: this.output[this.text.outputIndex].id,
          output_index: this.text.outputIndex,
          content_index: 0,
          delta: delta.content,
        }),
      );
    }
    for (const t of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
      const index = typeof t.index === 'number' ? t.index : 0;
      let open = this.calls.get(index);
      if (!open) {
        out.push(...this.closeText());
        open = { outputIndex: this.output.length, callId: t.id ?? `call_${index}`, name: t.function?.name ?? '', args: '' };
        this.calls.set(index, open);
        const item = shape.callItem(index, open.callId, open.name, '', 'in_progress');
        this.output.push(item);
        if (item.type === 'function_call') out.push(this.event('response.output_item.added', { output_index: open.outputIndex, item }));
      }
      const args = t.function?.arguments;
      if (typeof args === 'string' && args !== '') {
        open.args += args;
        const item = this.output[open.outputIndex];
        if (item.type === 'function_call')
          out.push(this.event('response.function_call_arguments.delta', { item_id: item.id, output_index: open.outputIndex, delta: args }));
      }
    }
    if (choice?.finish_reason) this.finish = choice.finish_reason;
    return out;
  }

  end(usage: TokenUsage): string[] {
    const out = this.start({});
    out.push(...this.closeText());
    const shape = this.shape!;
    for (const [index, open] of this.calls) {
      const item = shape.callItem(index, open.callId, open.name, open.args);
      this.output[open.outputIndex] = item;
      if (item.type === 'function_call') {
        out.push(this.event('response.function_call_arguments.done', { item_id: item.id, output_index: open.outputIndex, arguments: open.args }));
      } else {
        out.push(this.event('response.output_item.added', { output_index: open.outputIndex, item: { ...item, input: '', status: 'in_progress' } }));
        out.push(this.event('response.custom_tool_call_input.delta', { item_id: item.id, output_index: open.outputIndex, delta: item.input }));
        out.push(this.event('response.custom_tool_call_input.done', { item_id: item.id, output_index: open.outputIndex, input: item.input }));
      }
      out.push(this.event('response.output_item.done', { output_index: open.outputIndex, item }));
    }
    const status = STATUS_OF_FINISH(this.finish);
    out.push(
      this.event(status === 'completed' ? 'response.completed' : 'response.incomplete', { response: shape.response(status, this.output, usage, this.finish) }),
    );
    return out;
  }

  private start(c: Record<string, any>): string[] {
    if (this.shape) return [];
    this.shape = new ResponseShape(c.id, c.model ?? this.call.model, this.call);
    const response = this.shape.response('in_progress', [], null);
    return [this.event('response.created', { response }), this.event('response.in_progress', { response })];
  }

  private closeText(): string[] {
    if (!this.text) return [];
    const { outputIndex, text } = this.text;
    this.text = null;
    const item = this.shape!.messageItem(text);
    this.output[outputIndex] = item;
    const part = item.content[0];
    return [
      this.event('response.output_text.done', { item_id: item.id, output_index: outputIndex, content_index: 0, text }),
      this.event('response.content_part.done', { item_id: item.id, output_index: outputIndex, content_index: 0, part }),
      this.event('response.output_item.done', { output_index: outputIndex, item }),
    ];
  }

  private event(type: string, data: Record<string, unknown>): string {
    return responsesFrame(type, { sequence_number: this.seq++, ...data });
  }
}

/** Responses usage into disjoint classes: input includes the cached tokens, output the reasoning ones. */
export function responsesUsage(raw: unknown): TokenUsage {
  const u = (raw ?? {}) as Record<string, any>;
  const cached = tokenCount(u.input_tokens_details?.cached_tokens);
  return {
    input_tokens: Math.max(0, tokenCount(u.input_tokens) - cached),
    output_tokens: tokenCount(u.output_tokens),
    cache_read_tokens: cached,
    cache_write_tokens: 0,
    reasoning_tokens: tokenCount(u.output_tokens_details?.reasoning_tokens),
  };
}

/**
 * A Responses upstream's event stream passed on unchanged; usage from the response of the terminal
 * event (`response.completed`, `response.incomplete`), and `response.failed` or `error` as the call's error.
 */
export class ResponsesPassThrough implements StreamTranslator {
  complete = false;
  error: string | null = null;
  usage = noUsage();

  event(e: WireEvent): string[] {
    const data = parseJson(e.data) as Record<string, any> | undefined;
    switch (data?.type ?? e.event) {
      case 'response.completed':
      case 'response.incomplete':
        this.usage = responsesUsage(data?.response?.usage);
        this.complete = true;
        break;
      case 'response.failed':
        this.usage = responsesUsage(data?.response?.usage);
        this.error = String(data?.response?.error?.message ?? 'the upstream response failed');
        this.complete = true;
        break;
      case 'error':
        this.error = String(data?.message ?? data?.error?.message ?? 'upstream error');
        break;
    }
    return [e.raw];
  }
}
