/**
 * The one error class of the engine package family. `code` is a stable,
 * machine-readable identifier (e.g. `TOKENIZER_FILES_MISSING`); `message`
 * names the file, key or request field at fault.
 */
export class MlxcelError extends Error {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.name = 'MlxcelError';
    this.code = code;
  }
}
