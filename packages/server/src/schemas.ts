/**
 * JSON schemas of every request and response, written once: fastify validates requests with them
 * (types and ranges as the OpenAI reference documents them) and the tests check every response the
 * server sends against them. Checks a schema cannot express (a role's required content, `n` vs
 * `best_of`, token ids below the vocabulary) are in requests.ts.
 */

import { SAMPLING_FIELD_RULES } from '@mlxcel/engine';

const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });
const int = (minimum: number, maximum?: number) => nullable({ type: 'integer', minimum, ...(maximum === undefined ? {} : { maximum }) });

/**
 * A sampling field with the range the engine's request mapper accepts (the CLI's flags get the same),
 * narrowed where OpenAI documents less (`max_tokens` ≥ 1, `temperature` ≤ 2).
 */
const rule = (field: keyof typeof SAMPLING_FIELD_RULES, narrow: { min?: number; max?: number } = {}) => {
  const r = SAMPLING_FIELD_RULES[field];
  return nullable({ type: r.integer ? 'integer' : 'number', minimum: narrow.min ?? r.min, maximum: narrow.max ?? r.max });
};

/** Sampling fields chat and completions share. */
const samplingProperties = {
  model: { type: 'string' },
  max_tokens: rule('max_tokens', { min: 1 }),
  temperature: rule('temperature', { max: 2 }),
  top_p: rule('top_p'),
  top_k: rule('top_k'),
  min_p: rule('min_p'),
  presence_penalty: rule('presence_penalty'),
  frequency_penalty: rule('frequency_penalty'),
  repetition_penalty: rule('repetition_penalty'),
  n: int(1, 16),
  seed: rule('seed'),
  stop: nullable({ anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string', minLength: 1 }, maxItems: 16 }] }),
  stream: nullable({ type: 'boolean' }),
  stream_options: nullable({
    type: 'object',
    properties: { include_usage: { type: 'boolean' } },
  }),
  logit_bias: nullable({
    type: 'object',
    propertyNames: { pattern: '^(0|[1-9][0-9]{0,9})$' },
    additionalProperties: { type: 'number', minimum: -100, maximum: 100 },
  }),
  user: { type: 'string' },
} as const;

const textPart = {
  type: 'object',
  required: ['type'],
  properties: {
    type: { enum: ['text', 'image_url', 'input_audio', 'refusal', 'file'] },
    text: { type: 'string' },
    refusal: { type: 'string' },
    image_url: { type: 'object', required: ['url'], properties: { url: { type: 'string' }, detail: { enum: ['auto', 'low', 'high'] } } },
    input_audio: { type: 'object', required: ['data', 'format'], properties: { data: { type: 'string' }, format: { enum: ['wav', 'mp3'] } } },
  },
} as const;

/** A call the assistant made (in requests: the history of an agent loop; in responses: what the model called). */
const toolCall = {
  type: 'object',
  required: ['id', 'type', 'function'],
  properties: {
    id: { type: 'string' },
    type: { const: 'function' },
    function: { type: 'object', required: ['name', 'arguments'], properties: { name: { type: 'string' }, arguments: { type: 'string' } } },
  },
} as const;

const message = {
  type: 'object',
  required: ['role'],
  properties: {
    role: { enum: ['system', 'developer', 'user', 'assistant', 'tool', 'function'] },
    content: { anyOf: [{ type: 'string' }, { type: 'null' }, { type: 'array', items: textPart }] },
    name: { type: 'string' },
    tool_calls: nullable({ type: 'array', items: toolCall }),
    tool_call_id: { type: 'string' },
  },
} as const;

/** `tools[i]`: a function the model may call; `parameters` is the JSON Schema of its arguments (checked when it is compiled). */
const tool = {
  type: 'object',
  required: ['type', 'function'],
  properties: {
    type: { const: 'function' },
    function: {
      type: 'object',
      required: ['name'],
      properties: {
        name: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' },
        description: { type: 'string' },
        parameters: { type: 'object' },
        strict: nullable({ type: 'boolean' }),
      },
    },
  },
} as const;

const toolChoice = nullable({
  anyOf: [
    { enum: ['auto', 'none', 'required'] },
    { type: 'object', required: ['type', 'function'], properties: { type: { const: 'function' }, function: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } } },
  ],
});

const responseFormat = nullable({
  type: 'object',
  required: ['type'],
  properties: {
    type: { enum: ['text', 'json_object', 'json_schema'] },
    json_schema: {
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string' }, description: { type: 'string' }, schema: { type: ['object', 'boolean'] }, strict: nullable({ type: 'boolean' }) },
    },
  },
});

/** A llama.cpp-style GBNF grammar the output must follow (compiled on the tokenizer thread). */
const grammar = nullable({ type: 'string', minLength: 1 });

export const chatRequestSchema = {
  $id: 'ChatCompletionRequest',
  type: 'object',
  required: ['messages'],
  properties: {
    ...samplingProperties,
    messages: { type: 'array', minItems: 1, items: message },
    max_completion_tokens: rule('max_completion_tokens', { min: 1 }),
    logprobs: nullable({ type: 'boolean' }),
    top_logprobs: int(0, 20),
    tools: nullable({ type: 'array', items: tool, maxItems: 128 }),
    tool_choice: toolChoice,
    parallel_tool_calls: nullable({ type: 'boolean' }),
    response_format: responseFormat,
    grammar,
  },
} as const;

const tokenIds = { type: 'array', minItems: 1, items: { type: 'integer', minimum: 0 } } as const;

export const completionRequestSchema = {
  $id: 'CompletionRequest',
  type: 'object',
  required: ['prompt'],
  properties: {
    ...samplingProperties,
    prompt: {
      anyOf: [
        { type: 'string', minLength: 1 },
        { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
        tokenIds,
        { type: 'array', minItems: 1, items: tokenIds },
      ],
    },
    echo: nullable({ type: 'boolean' }),
    logprobs: int(0, 20),
    best_of: int(1, 16),
    grammar,
  },
} as const;

// ---- responses (checked by the tests; the OpenAI SDK types are checked against them with tsc) ----

const usage = {
  type: 'object',
  required: ['prompt_tokens', 'completion_tokens', 'total_tokens', 'prompt_tokens_details'],
  properties: {
    prompt_tokens: { type: 'integer' }, completion_tokens: { type: 'integer' }, total_tokens: { type: 'integer' },
    prompt_tokens_details: { type: 'object', required: ['cached_tokens'], properties: { cached_tokens: { type: 'integer', minimum: 0 } } },
  },
} as const;

const logprobEntry = {
  type: 'object',
  required: ['token', 'logprob', 'bytes'],
  properties: { token: { type: 'string' }, logprob: { type: 'number' }, bytes: { type: 'array', items: { type: 'integer' } } },
} as const;

const chatLogprobs = nullable({
  type: 'object',
  required: ['content', 'refusal'],
  properties: {
    content: {
      type: 'array',
      items: { ...logprobEntry, required: [...logprobEntry.required, 'top_logprobs'], properties: { ...logprobEntry.properties, top_logprobs: { type: 'array', items: logprobEntry } } },
    },
    refusal: { type: 'null' },
  },
});

const finishReason = { enum: ['stop', 'length', 'tool_calls'] } as const;
const envelope = (object: string) => ({
  id: { type: 'string' },
  object: { const: object },
  created: { type: 'integer' },
  model: { type: 'string' },
  system_fingerprint: { type: 'string' },
});

export const chatCompletionSchema = {
  $id: 'ChatCompletion',
  type: 'object',
  required: ['id', 'object', 'created', 'model', 'system_fingerprint', 'choices', 'usage'],
  properties: {
    ...envelope('chat.completion'),
    choices: {
      type: 'array',
      items: {
        type: 'object',
        required: ['index', 'message', 'logprobs', 'finish_reason'],
        properties: {
          index: { type: 'integer' },
          message: {
            type: 'object',
            required: ['role', 'content', 'refusal'],
            properties: {
              role: { const: 'assistant' },
              // null when the message only calls tools
              content: { type: ['string', 'null'] },
              refusal: { type: 'null' },
              tool_calls: { type: 'array', items: toolCall, minItems: 1 },
            },
          },
          logprobs: chatLogprobs,
          finish_reason: finishReason,
        },
      },
    },
    usage,
  },
} as const;

export const chatChunkSchema = {
  $id: 'ChatCompletionChunk',
  type: 'object',
  required: ['id', 'object', 'created', 'model', 'system_fingerprint', 'choices'],
  properties: {
    ...envelope('chat.completion.chunk'),
    choices: {
      type: 'array',
      items: {
        type: 'object',
        required: ['index', 'delta', 'logprobs', 'finish_reason'],
        properties: {
          index: { type: 'integer' },
          delta: {
            type: 'object',
            properties: {
              role: { const: 'assistant' },
              content: { type: 'string' },
              refusal: { type: 'null' },
              // OpenAI's incremental form: `index` says which call a piece belongs to; id, type and name come with its first piece
              tool_calls: {
                type: 'array',
                items: {
                  type: 'object',
                  required: ['index', 'function'],
                  properties: {
                    index: { type: 'integer' }, id: { type: 'string' }, type: { const: 'function' },
                    function: { type: 'object', properties: { name: { type: 'string' }, arguments: { type: 'string' } } },
                  },
                },
              },
            },
          },
          logprobs: chatLogprobs,
          finish_reason: nullable(finishReason),
        },
      },
    },
    usage: nullable(usage),
  },
} as const;

const completionLogprobs = nullable({
  type: 'object',
  required: ['tokens', 'token_logprobs', 'top_logprobs', 'text_offset'],
  properties: {
    tokens: { type: 'array', items: { type: 'string' } },
    // null for an echoed prompt's first token (nothing precedes it)
    token_logprobs: { type: 'array', items: { type: ['number', 'null'] } },
    top_logprobs: { type: 'array', items: { anyOf: [{ type: 'object', additionalProperties: { type: 'number' } }, { type: 'null' }] } },
    text_offset: { type: 'array', items: { type: 'integer' } },
  },
});

/** A text completion, or one streamed chunk of one (same object name, `usage` only where asked for). */
export const completionSchema = {
  $id: 'Completion',
  type: 'object',
  required: ['id', 'object', 'created', 'model', 'system_fingerprint', 'choices'],
  properties: {
    ...envelope('text_completion'),
    choices: {
      type: 'array',
      items: {
        type: 'object',
        required: ['index', 'text', 'logprobs', 'finish_reason'],
        properties: { index: { type: 'integer' }, text: { type: 'string' }, logprobs: completionLogprobs, finish_reason: nullable(finishReason) },
      },
    },
    usage: nullable(usage),
  },
} as const;

export const modelSchema = {
  $id: 'Model',
  type: 'object',
  required: ['id', 'object', 'created', 'owned_by'],
  properties: { id: { type: 'string' }, object: { const: 'model' }, created: { type: 'integer' }, owned_by: { type: 'string' } },
} as const;

export const modelListSchema = {
  $id: 'ModelList',
  type: 'object',
  required: ['object', 'data'],
  properties: { object: { const: 'list' }, data: { type: 'array', items: modelSchema } },
} as const;

export const errorSchema = {
  $id: 'Error',
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['message', 'type', 'param', 'code'],
      properties: {
        message: { type: 'string', minLength: 1 },
        type: { type: 'string' },
        param: { type: ['string', 'null'] },
        code: { type: ['string', 'null'] },
      },
    },
  },
} as const;
