/** OpenAI-compatible tool types (the shapes of the Chat Completions API). */

export interface ToolFunction {
  name: string;
  description?: string;
  /** JSON Schema of the arguments object. */
  parameters?: Record<string, unknown>;
  strict?: boolean | null;
}

export interface ToolDefinition {
  type: 'function';
  function: ToolFunction;
}

/** A parsed call: `arguments` is a JSON text (as OpenAI sends it). */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** One streamed piece of `tool_calls` (OpenAI's `choices[].delta.tool_calls[]`). */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

/** An OpenAI chat message (the subset the engine renders). */
export interface OpenAIMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: string | null | Array<{ type: string; text?: string; [k: string]: unknown }>;
  tool_calls?: ToolCall[] | null;
  tool_call_id?: string;
  name?: string;
}
