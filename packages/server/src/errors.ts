/**
 * OpenAI's error shape `{error: {message, type, param, code}}`, the one table from engine error codes
 * to HTTP statuses, and the translation of schema-validation failures into a `param` path.
 */

export type ErrorType = 'invalid_request_error' | 'authentication_error' | 'not_found_error' | 'rate_limit_error' | 'server_error' | 'timeout_error';

export interface ErrorBody {
  error: { message: string; type: ErrorType; param: string | null; code: string | null };
}

export class ApiError extends Error {
  readonly type: ErrorType;
  readonly param: string | null;
  readonly code: string | null;
  /** Extra response headers (Retry-After, Allow). */
  readonly headers: Record<string, string>;

  constructor(
    readonly status: number,
    message: string,
    opts: { type?: ErrorType; param?: string | null; code?: string | null; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.type = opts.type ?? (status >= 500 ? 'server_error' : 'invalid_request_error');
    this.param = opts.param ?? null;
    this.code = opts.code ?? null;
    this.headers = opts.headers ?? {};
  }

  body(): ErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** A 400 about one request field. */
export const badField = (param: string, message: string, code: string | null = null) => new ApiError(400, message, { param, code });

/**
 * Engine / tokenizer error codes -> what the client gets. Every code a request can cause is a 4xx;
 * anything not listed is a server fault (500).
 */
const ENGINE_ERRORS: Record<string, { status: number; param: string | null; code: string | null }> = {
  PROMPT_TOO_LONG: { status: 400, param: 'messages', code: 'context_length_exceeded' },
  PROMPT_EMPTY: { status: 400, param: 'prompt', code: 'empty_prompt' },
  TOKENIZER_MISSING: { status: 400, param: 'prompt', code: 'tokenizer_missing' },
  CHAT_TEMPLATE_MISSING: { status: 400, param: 'messages', code: 'chat_template_missing' },
  CHAT_TEMPLATE_ERROR: { status: 400, param: 'messages', code: 'chat_template_error' },
  CHAT_PLACEHOLDER_MISMATCH: { status: 400, param: 'messages', code: null },
  SAMPLER_OPTION_INVALID: { status: 400, param: null, code: null },
  BAD_OPTION: { status: 400, param: null, code: null },
  AUDIO_UNSUPPORTED: { status: 400, param: 'messages', code: 'audio_input_unsupported' },
  // structured output and tools (the worker names the field: response_format, grammar, tools[i].function.parameters, ...)
  SCHEMA_UNSUPPORTED: { status: 400, param: 'response_format', code: 'unsupported_schema' },
  SCHEMA_INVALID: { status: 400, param: 'response_format', code: 'invalid_schema' },
  GRAMMAR_INVALID: { status: 400, param: 'grammar', code: 'invalid_grammar' },
  GRAMMAR_LEFT_RECURSION: { status: 400, param: 'grammar', code: 'invalid_grammar' },
  TOOLS_INVALID: { status: 400, param: 'tools', code: 'invalid_tools' },
  TOOL_CHOICE_INVALID: { status: 400, param: 'tool_choice', code: 'invalid_tool_choice' },
  TOOL_ARGUMENTS_INVALID: { status: 400, param: 'messages', code: 'invalid_tool_arguments' },
  BAD_REQUEST: { status: 400, param: 'messages', code: 'invalid_value' },
  // images and audio (the worker names the content part)
  BAD_IMAGE_URL: { status: 400, param: 'messages', code: 'invalid_image_url' },
  BAD_BASE64: { status: 400, param: 'messages', code: 'invalid_base64' },
  REMOTE_URL_REFUSED: { status: 400, param: 'messages', code: 'remote_url_refused' },
  LOCAL_FILE_REFUSED: { status: 400, param: 'messages', code: 'local_file_refused' },
  FILE_MISSING: { status: 400, param: 'messages', code: 'file_not_found' },
  IMAGE_TOO_LARGE: { status: 400, param: 'messages', code: 'image_too_large' },
  E_IMAGE: { status: 400, param: 'messages', code: 'invalid_image' },
  E_IMAGE_TOKENS: { status: 400, param: 'messages', code: 'image_placeholder_mismatch' },
  E_AUDIO: { status: 400, param: 'messages', code: 'invalid_audio' },
  E_AUDIO_TOKENS: { status: 400, param: 'messages', code: 'audio_placeholder_mismatch' },
  /** Every E_WAV_* code of the WAV reader (truncated, unsupported format, bad chunk sizes, ...). */
  E_WAV: { status: 400, param: 'messages', code: 'invalid_audio' },
  E_CHAT: { status: 400, param: 'messages', code: 'invalid_value' },
  VISION_UNSUPPORTED: { status: 400, param: 'messages', code: 'image_input_unsupported' },
  VISION_DISABLED: { status: 400, param: 'messages', code: 'image_input_unsupported' },
  MODEL_LOADING: { status: 503, param: null, code: 'model_loading' },
};

/**
 * An engine failure as the client sees it; `promptParam` names the prompt field of the route. The
 * field a worker named (`e.param`) wins over the table's.
 */
export function fromEngineError(e: { code: string; message: string; param?: string }, promptParam: 'messages' | 'prompt'): ApiError {
  const known = ENGINE_ERRORS[e.code] ?? (e.code.startsWith('E_WAV_') ? ENGINE_ERRORS.E_WAV : undefined);
  if (!known) return new ApiError(500, `${e.message} (${e.code})`, { code: 'internal_error' });
  const param = e.param ?? (known.param === 'messages' || known.param === 'prompt' ? promptParam : known.param);
  return new ApiError(known.status, e.message, { param, code: known.code });
}

interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/** `/messages/0/content` -> `messages[0].content` */
function paramPath(pointer: string): string {
  let out = '';
  for (const part of pointer.split('/').slice(1)) {
    const key = part.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^\d+$/.test(key) ? `[${key}]` : out ? `.${key}` : key;
  }
  return out;
}

/**
 * The most useful of ajv's errors for a request, as a 400 naming the field. With `anyOf` (nullable
 * fields, `stop`, `prompt`) ajv reports each branch; the deepest path names the field best.
 */
export function fromValidation(errors: readonly AjvError[]): ApiError {
  // The deepest path names the field best; among those, a range / size error says more than the
  // "must be <type>" of the anyOf branches that did not apply.
  const depth = Math.max(...errors.map((e) => e.instancePath.length));
  const deepest = errors.filter((e) => e.instancePath.length === depth && e.keyword !== 'anyOf');
  const best = deepest.find((e) => e.keyword !== 'type') ?? deepest[0] ?? errors[0]!;
  let param = paramPath(best.instancePath);
  let message: string;
  if (best.keyword === 'required') {
    const missing = String(best.params.missingProperty);
    param = param ? `${param}.${missing}` : missing;
    message = `'${param}' is required`;
  } else if (best.keyword === 'enum') {
    message = `'${param}' must be one of ${(best.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
  } else if (best.keyword === 'propertyNames') {
    message = `'${param}' keys must be token ids (non-negative integers), got ${JSON.stringify(best.params.propertyName)}`;
  } else {
    // Branch errors of an anyOf say "must be integer" for one branch only: list what the field may be.
    const kinds = deepest.filter((e) => e.instancePath === best.instancePath && e.keyword === 'type').map((e) => String(e.params.type));
    message = kinds.length > 1 ? `'${param}' must be ${[...new Set(kinds)].join(' or ')}` : `'${param}' ${best.message ?? 'is invalid'}`;
  }
  return new ApiError(400, message, { param: param || null, code: best.keyword === 'required' ? 'missing_required_parameter' : 'invalid_value' });
}
