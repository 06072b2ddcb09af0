/** Journal test helpers: runtime error cases as the reference runtime writes them. */

/** A case as the reference runtime serializes it (serde, every field present). */
export function referenceCase(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    case_id: '9b2f7c1e-4d7a-4f0e-9a51-2c3d4e5f6a7b',
    turn_id: 'turn-0007',
    occurred_at_ms: 1767225600123,
    error_kind: 'invalid_tool_args',
    severity: 2,
    detected_by: 'runtime_tool_executor',
    task: {
      origin: 'telegram',
      event_sources: ['telegram'],
      user_request_summary: 'telegram from alice: inspect this',
      claimed_event_ids: ['ev-1'],
      claimed_app_notices: [],
      bound_primitive_id: null,
      workflow_origin: null,
    },
    runtime: { phase: 'tool_execution', available_tool_names: ['read_file', 'finish_and_send'], plan_summary: ['InProgress: read the file'], compact_context_summary: 'user asked to inspect a file' },
    action: { assistant_text_summary: null, tool_call_summaries: ['read_file {"path":3}'], tool_result_summaries: [], previous_action_window: ['tool_call: read_file'] },
    observation: {
      expected_behavior: 'Tool calls should use available tools with valid arguments and satisfy the tool-specific runtime contract.',
      actual_behavior: 'The tool executor rejected the tool call.',
      evidence: 'invalid arguments for read_file: invalid type: integer `3`, expected a string at line 1 column 10',
      recoverability: 'tool_error_returned_to_model',
      retry_count: 0,
      terminal_status: null,
    },
    contract_refs: ['tool argument contract'],
    ...over,
  };
}

