import { BadRequest } from '../../../core/errors.ts';
import type { ChatRequest, TokenUsage } from '../providers/types.ts';
import { ResponseShape, STATUS_OF_FINISH, responsesFrame } from './responses-shape.ts';
import { ChatToResponsesStream, ResponsesPassThrough, responsesUsage } from './responses-stream.ts';
import type { ClientProtocol, ProtocolCall } from './types.ts';

type Item = Record<string, any>;
type ChatMessage = Record<string, any>;

/** OpenAI's error type for a status (the Responses and chat APIs share the error shape). */
export function openAiErrorType(status: number): string {
  if (status === 400 || status === 413 || status === 422) return 'invalid_request_error';
  if (status === 401) return 'authentication_error';
  if (status === 402 || status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  return 'server_error';
}

function partText(part: Item, field: string): Record<string, unknown> {
  if (part?.type === 'input_text' || part?.type === 'output_text' || part?.type === 'text') return { type: 'text', text: String(part.text ?? '') };
  if (part?.type === 'input_image' && typeof part.image_url === 'string') return { type: 'image_url', image_url: { url: part.image_url } };
  throw new BadRequest(`${field}.type ${String(part?.type)} cannot be sent to a chat-completions target`);
}

function messageContent(content: unknown, field: string): unknown {
  if (typeof content === 'string') return content;
  const parts = (Array.isArray(content) ? content : []).map((p: Item, j: number) => partText(p, `${field}.content[${j}]`));
  return parts.every((p) => p.type === 'text') ? parts.map((p) => p.text).join('') : parts;
}

const outputText = (output: unknown): string =>
  typeof output === 'string'
    ? output
    : Array.isArray(output)
      ? output.map((p: Item) => (typeof p?.text === 'string' ? p.text : '')).join('')
      : JSON.stringify(output);

/** Free-form (custom) tools become function tools taking one string, `input`. */
const CUSTOM_PARAMETERS = { type: 'object', properties: { input: { type: 'string', description: 'The raw input of the tool' } }, required: ['input'] };

/** A Responses request as chat completions (docs/inference.md, "Translation"). */
export function responsesToChat(call: ProtocolCall): ChatRequest {
  const body = call.body as Item;
  if (body.previous_response_id)
    throw new BadRequest('previous_response_id is not supported: the gateway stores no responses; send the whole input (store: false)');
  const messages: ChatMessage[] = [];
  if (typeof body.instructions === 'string' && body.instructions) messages.push({ role: 'system', content: body.instructions });
  const items: Item[] = typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : body.input;
  const lastAssistant = (): ChatMessage => {
    const last = messages.at(-1);
    if (last?.role === 'assistant') return last;
    const fresh: ChatMessage = { role: 'assistant', content: null };
    messages.push(fresh);
    return fresh;
  };
  items.forEach((item, i) => {
    const field = `input[${i}]`;
    const type = item.type ?? (item.role ? 'message' : undefined);
    switch (type) {
      case 'message': {
        const role = item.role === 'developer' ? 'system' : item.role;
        if (!['user', 'assistant', 'system'].includes(role)) throw new BadRequest(`${field}.role must be user, assistant, system or developer`);
        const content = messageContent(item.content, field);
        if (role === 'assistant') {
          const last = lastAssistant();
          last.content = typeof last.content === 'string' && typeof content === 'string' ? last.content + content : content;
        } else messages.push({ role, content });
        break;
      }
      case 'function_call':
      case 'custom_tool_call': {
        const args = type === 'function_call' ? String(item.arguments ?? '') : JSON.stringify({ input: String(item.input ?? '') });
        const last = lastAssistant();
        last.tool_calls = [...(last.tool_calls ?? []), { id: item.call_id, type: 'function', function: { name: item.name, arguments: args } }];
        break;
      }
      case 'function_call_output':
      case 'custom_tool_call_output':
        messages.push({ role: 'tool', tool_call_id: item.call_id, content: outputText(item.output) });
        break;
      case 'reasoning':
        break; // encrypted or summarised reasoning of an earlier turn: a chat-completions upstream cannot take it back
      default:
        throw new BadRequest(`${field}.type ${String(type)} cannot be sent to a chat-completions target`);
    }
  });
  const chat: ChatRequest = { model: call.model, messages, stream: call.stream };
  if (body.max_output_tokens) chat.max_tokens = body.max_output_tokens;
  for (const key of ['temperature', 'top_p', 'parallel_tool_calls'] as const) if (body[key] !== undefined && body[key] !== null) chat[key] = body[key];
  const tools = (Array.isArray(body.tools) ? body.tools : []).flatMap((t: Item) => {
    if (t.type === 'function')
      return [
        {
          type: 'function',
          function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.parameters ?? { type: 'object', properties: {} } },
        },
      ];
    if (t.type === 'custom')
      return [{ type: 'function', function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: CUSTOM_PARAMETERS } }];
    return []; // hosted tools (web_search, file_search, …) exist only on OpenAI's side
  });
  if (tools.length) chat.tools = tools;
  const choice = body.tool_choice;
  if (typeof choice === 'string' && tools.length) chat.tool_choice = choice;
  else if (choice && typeof choice === 'object' && choice.name) chat.tool_choice = { type: 'function', function: { name: choice.name } };
  return chat;
}

/** A chat.completion as a Responses `response` object. */
export function chatToResponse(chat: Record<string, any>, usage: TokenUsage, call: ProtocolCall): Item {
  const shape = new ResponseShape(chat.id, chat.model ?? call.model, call);
  const choice = chat.choices?.[0] ?? {};
  const message = choice.message ?? {};
  const output: Item[] = [];
  const text = typeof message.content === 'string' ? message.content : '';
  if (text) output.push(shape.messageItem(text));
  (Array.isArray(message.tool_calls) ? message.tool_calls : []).forEach((c: Item, i: number) =>
    output.push(shape.callItem(i, c.id, c.function?.name, String(c.function?.arguments ?? ''))),
  );
  return shape.response(STATUS_OF_FINISH(choice.finish_reason), output, usage, choice.finish_reason);
}

/**
 * OpenAI Responses (`POST /inference/v1/responses`): passed through to an openai target that says
 * it serves the Responses API (`responses_api`), translated through chat completions for any other.
 */
export const responsesProtocol: ClientProtocol = {
  name: 'responses',
  native: null,
  isNative: (target) => target.kind === 'openai' && target.responses_api === true,
  nativePath: '/responses',
  nativeRequest: (call, upstreamModel) => ({ ...call.body, model: upstreamModel }),
  nativeUsage: (body) => responsesUsage((body as { usage?: unknown })?.usage),
  nativeStream: () => new ResponsesPassThrough(),
  toChat: responsesToChat,
  fromChat: chatToResponse,
  chatStream: (call) => new ChatToResponsesStream(call),
  errorBody: (status, message) => ({ error: { message, type: openAiErrorType(status), param: null, code: null } }),
  streamError: (message, _type, status) =>
    responsesFrame('response.failed', {
      sequence_number: 0,
      response: { object: 'response', status: 'failed', error: { code: status === 504 ? 'timeout' : 'server_error', message } },
    }),
};
