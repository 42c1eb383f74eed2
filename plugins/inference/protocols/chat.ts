import { openAiAdapter, openAiUsage } from '../providers/openai.ts';
import { dataFrame } from '../providers/sse.ts';
import type { ChatRequest } from '../providers/types.ts';
import type { ClientProtocol } from './types.ts';

/** Chat completions (`POST /inference/v1/chat/completions`): native to openai targets; the adapters translate it for the others. */
export const chatProtocol: ClientProtocol = {
  name: 'chat',
  native: 'openai',
  nativeRequest: (call, upstreamModel) => openAiAdapter.chatRequest(call.body as ChatRequest, upstreamModel),
  nativeUsage: (body) => openAiUsage((body as { usage?: unknown })?.usage),
  nativeStream: (call) => openAiAdapter.stream(call.body as ChatRequest),
  toChat: (call) => call.body as ChatRequest,
  fromChat: (chat) => chat,
  chatStream: () => null,
  errorBody: (_status, message, type = 'upstream_error') => ({ error: { message, type, code: null } }),
  streamError: (message, type, status) => dataFrame({ error: { message, type, code: status } }),
};
