export { type ResponseFormat, type ConstraintSpec, type CompileOptions, CompiledConstraint, ConstrainedDecoding, compileConstraint, constraintKey, grammarOf } from './constraint.js';
export { GrammarBuilder, type Grammar, type Element, type Sequence } from './grammar.js';
export { parseGbnf, type GbnfOptions } from './gbnf.js';
export { jsonSchemaGrammar, jsonGrammar } from './json-schema.js';
export { GrammarMatcher } from './matcher.js';
export { vocabularyOf, type Vocabulary } from './vocab.js';
