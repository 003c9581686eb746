/**
 * The engine uses mlxcel's one error class (defined in @mlxcel/tensor so every package throws the
 * same type): `code` is a stable identifier such as `TOKENIZER_FILES_MISSING`, and the message names
 * the file, key or request field at fault.
 */
export { MlxcelError } from '@mlxcel/tensor';
