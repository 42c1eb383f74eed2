import Joi from 'joi';

const block = Joi.object({ type: Joi.string().required() }).unknown(true);

/** An Anthropic Messages request: what the gateway reads is checked, the rest passes (to an Anthropic target) or is translated. */
export const messagesRequest = Joi.object({
  model: Joi.string().min(1).max(300).required(),
  max_tokens: Joi.number().integer().min(1).required(),
  messages: Joi.array()
    .items(
      Joi.object({
        // system: Claude Code sends instructions as system messages between the turns.
        role: Joi.string().valid('user', 'assistant', 'system').required(),
        content: Joi.alternatives(Joi.string(), Joi.array().items(block)).required(),
      }).unknown(true),
    )
    .min(1)
    .required(),
  system: Joi.alternatives(Joi.string().allow(''), Joi.array().items(block)),
  stream: Joi.boolean(),
  tools: Joi.array().items(Joi.object({ name: Joi.string().required() }).unknown(true)),
  tool_choice: Joi.object({ type: Joi.string().valid('auto', 'any', 'tool', 'none').required(), name: Joi.string() }).unknown(true),
  stop_sequences: Joi.array().items(Joi.string()),
})
  .unknown(true)
  .label('MessagesRequest');

/** Anthropic's count_tokens request: a messages request without max_tokens. */
export const countTokensRequest = messagesRequest.fork('max_tokens', (schema) => schema.optional()).label('CountTokensRequest');

/** An OpenAI Responses request: `input` (text or items) and the options the gateway translates. */
export const responsesRequest = Joi.object({
  model: Joi.string().min(1).max(300).required(),
  input: Joi.alternatives(Joi.string(), Joi.array().items(Joi.object().unknown(true)).min(1)).required(),
  instructions: Joi.string().allow('', null),
  stream: Joi.boolean(),
  max_output_tokens: Joi.number().integer().min(1).allow(null),
  tools: Joi.array().items(Joi.object({ type: Joi.string().required() }).unknown(true)),
  previous_response_id: Joi.string().allow(null),
})
  .unknown(true)
  .label('ResponsesRequest');

/** A Gemini generateContent request (the model is in the path). */
export const geminiRequest = Joi.object({
  contents: Joi.array()
    .items(Joi.object({ role: Joi.string(), parts: Joi.array().items(Joi.object().unknown(true)).required() }).unknown(true))
    .min(1)
    .required(),
  systemInstruction: Joi.alternatives(Joi.string(), Joi.object().unknown(true)),
  tools: Joi.array().items(Joi.object().unknown(true)),
  generationConfig: Joi.object({ maxOutputTokens: Joi.number().integer().min(1) }).unknown(true),
})
  .unknown(true)
  .label('GenerateContentRequest');

/** The protocols' answers, for the API document (not validated: bodies are the upstream's or translated, streams are not JSON). */
export const messagesResponse = Joi.object({ id: Joi.string(), type: Joi.string().valid('message'), content: Joi.array(), usage: Joi.object().unknown(true) })
  .unknown(true)
  .label('Message')
  .description('application/json: an Anthropic message; with stream: true, text/event-stream of its events (message_start … message_stop)');
export const countTokensResponse = Joi.object({ input_tokens: Joi.number().integer(), estimated: Joi.boolean() }).label('TokenCount');
export const responsesResponse = Joi.object({
  id: Joi.string(),
  object: Joi.string().valid('response'),
  output: Joi.array(),
  usage: Joi.object().unknown(true),
})
  .unknown(true)
  .label('Response')
  .description('application/json: a Responses response; with stream: true, text/event-stream of its events (response.created … response.completed)');
export const geminiResponse = Joi.object({ candidates: Joi.array(), usageMetadata: Joi.object().unknown(true), totalTokens: Joi.number().integer() })
  .unknown(true)
  .label('GenerateContentResponse')
  .description('application/json: a GenerateContentResponse; for :streamGenerateContent, text/event-stream of them');
export const gatewayInfo = Joi.object({ gateway: Joi.string(), protocols: Joi.array().items(Joi.string()) }).label('GatewayInfo');
