/**
 * The one error class of mlxcel. `code` is stable and machine-readable; the message names the file,
 * tensor, key or argument at fault.
 */
export class MlxcelError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MlxcelError';
    this.code = code;
  }
}
