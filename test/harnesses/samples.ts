/** Lines in each CLI's real stream format (as docs/harnesses.md describes them), for parser and contract tests. */
const j = (o: unknown) => JSON.stringify(o);
const REPLY = 'All tests pass now.\n\n```json-result\n{"svc": {"status": "success", "summary": "fixed add()"}}\n```';

export const claudeStream = [
  j({ type: 'system', subtype: 'init', session_id: 's1', model: 'claude-sonnet-4-5', permissionMode: 'acceptEdits', tools: ['Bash', 'Edit'], mcp_servers: [] }),
  j({
    type: 'assistant',
    message: {
      id: 'msg_1',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [
        { type: 'thinking', thinking: 'hmm' },
        { type: 'text', text: 'Running the tests.' },
        { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'npm test' } },
      ],
      usage: { input_tokens: 10, output_tokens: 5 },
    },
    session_id: 's1',
  }),
  j({ type: 'user', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '1 failing' }] }, session_id: 's1' }),
  j({
    type: 'assistant',
    message: {
      id: 'msg_2',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [{ type: 'text', text: REPLY }],
      usage: { input_tokens: 10, output_tokens: 5 },
    },
    session_id: 's1',
  }),
  j({
    type: 'result',
    subtype: 'success',
    is_error: false,
    duration_ms: 9000,
    duration_api_ms: 7000,
    num_turns: 4,
    result: REPLY,
    session_id: 's1',
    total_cost_usd: 0.05,
    usage: { input_tokens: 30, output_tokens: 700, cache_read_input_tokens: 9000, cache_creation_input_tokens: 1000 },
    modelUsage: {
      'claude-sonnet-4-5': { inputTokens: 25, outputTokens: 650, cacheReadInputTokens: 9000, cacheCreationInputTokens: 1000, costUSD: 0.048 },
      'claude-haiku-4-5': { inputTokens: 5, outputTokens: 50, cacheReadInputTokens: 0, cacheCreationInputTokens: 0, costUSD: 0.002 },
    },
  }),
];
export const claudeFailure = [
  j({ type: 'result', subtype: 'error_max_turns', is_error: true, num_turns: 10, session_id: 's1', usage: { input_tokens: 1, output_tokens: 1 } }),
];

export const codexStream = [
  j({ type: 'thread.started', thread_id: 't1' }),
  j({ type: 'turn.started' }),
  j({ type: 'item.completed', item: { id: 'item_0', type: 'reasoning', text: '**Scanning**' } }),
  j({ type: 'item.started', item: { id: 'item_1', type: 'command_execution', command: 'bash -lc "npm test"', status: 'in_progress' } }),
  j({
    type: 'item.completed',
    item: { id: 'item_1', type: 'command_execution', command: 'bash -lc "npm test"', aggregated_output: 'ok', exit_code: 0, status: 'completed' },
  }),
  j({ type: 'item.completed', item: { id: 'item_2', type: 'file_change', changes: [{ path: 'src/add.ts', kind: 'update' }], status: 'completed' } }),
  j({ type: 'item.completed', item: { id: 'item_3', type: 'mcp_tool_call', server: 'docs', tool: 'search', arguments: { q: 'add' }, status: 'completed' } }),
  j({ type: 'item.completed', item: { id: 'item_4', type: 'agent_message', text: REPLY } }),
  j({ type: 'turn.completed', usage: { input_tokens: 24763, cached_input_tokens: 24448, output_tokens: 122 } }),
];
export const codexFailure = [j({ type: 'turn.failed', error: { message: 'stream disconnected before completion' } })];

export const geminiStream = [
  j({ type: 'init', timestamp: '2025-10-10T12:00:00.000Z', session_id: 'g1', model: 'gemini-2.5-pro' }),
  j({ type: 'message', timestamp: '2025-10-10T12:00:00.001Z', role: 'user', content: 'fix add' }),
  j({ type: 'tool_use', timestamp: '2025-10-10T12:00:01.000Z', tool_name: 'run_shell_command', tool_id: 'r1', parameters: { command: 'npm test' } }),
  j({ type: 'tool_result', timestamp: '2025-10-10T12:00:02.000Z', tool_id: 'r1', status: 'success', output: 'ok' }),
  ...[REPLY.slice(0, 30), REPLY.slice(30, 61), REPLY.slice(61)].map((content) =>
    j({ type: 'message', timestamp: '2025-10-10T12:00:03.000Z', role: 'assistant', content, delta: true }),
  ),
  j({
    type: 'result',
    timestamp: '2025-10-10T12:00:04.000Z',
    status: 'success',
    stats: { total_tokens: 1790, input_tokens: 1500, output_tokens: 290, cached: 1000, input: 500, duration_ms: 4000, tool_calls: 1 },
  }),
];
export const geminiFailure = [
  j({ type: 'result', timestamp: '2025-10-10T12:00:04.000Z', status: 'error', error: { type: 'FatalTurnLimitedError', message: 'Reached max session turns' } }),
];

export const opencodeStream = [
  j({ type: 'step_start', timestamp: 1, sessionID: 'ses_1', part: { id: 'p1', type: 'step-start', snapshot: 'abc' } }),
  j({
    type: 'tool_use',
    timestamp: 2,
    sessionID: 'ses_1',
    part: { id: 'p2', type: 'tool', callID: 'c1', tool: 'bash', state: { status: 'completed', input: { command: 'npm test' }, output: 'ok' } },
  }),
  j({
    type: 'step_finish',
    timestamp: 3,
    sessionID: 'ses_1',
    part: {
      id: 'p3',
      type: 'step-finish',
      reason: 'tool-calls',
      cost: 0.01,
      tokens: { input: 400, output: 50, reasoning: 10, cache: { read: 2000, write: 0 } },
    },
  }),
  j({ type: 'text', timestamp: 4, sessionID: 'ses_1', part: { id: 'p4', type: 'text', text: REPLY, time: { start: 3, end: 4 } } }),
  j({
    type: 'step_finish',
    timestamp: 5,
    sessionID: 'ses_1',
    part: { id: 'p5', type: 'step-finish', reason: 'stop', cost: 0.02, tokens: { input: 100, output: 250, reasoning: 0, cache: { read: 2400, write: 100 } } },
  }),
];
export const opencodeFailure = [
  j({
    type: 'error',
    timestamp: 6,
    sessionID: 'ses_1',
    error: { name: 'ProviderAuthError', data: { providerID: 'anthropic', message: 'API key is missing' } },
  }),
];
