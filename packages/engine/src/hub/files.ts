/**
 * The files a model needs, as glob patterns over repo paths (`*` and `?` do not cross `/`,
 * so weights in sub-folders such as `original/` are left alone).
 */
export const DEFAULT_ALLOW_PATTERNS: readonly string[] = [
  'config.json',
  'generation_config.json',
  'tokenizer*',
  'special_tokens_map.json',
  'added_tokens.json',
  'chat_template.jinja',
  'chat_template.json',
  'preprocessor_config.json',
  'processor_config.json',
  '*.tiktoken',
  'model.safetensors.index.json',
  '*.safetensors',
];

function globToRegExp(glob: string): RegExp {
  let re = '^';
  for (const ch of glob) {
    if (ch === '*') re += '[^/]*';
    else if (ch === '?') re += '[^/]';
    else re += ch.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(re + '$');
}

export function matchesAny(file: string, patterns: readonly string[]): boolean {
  return patterns.some((p) => globToRegExp(p).test(file));
}

/** A repo path that is safe to join under a snapshot folder. */
export function isSafeRepoPath(file: string): boolean {
  if (file.length === 0 || file.startsWith('/') || file.includes('\\') || file.includes('\0')) return false;
  return file.split('/').every((part) => part !== '' && part !== '.' && part !== '..');
}

/**
 * Choose the files to download from a repo listing. When the repo has a sharded-weights
 * index and the caller downloads it, only the shards that `weightMapFiles` names are kept
 * among the `*.safetensors` (some repos also carry a consolidated copy).
 */
export function selectFiles(siblings: readonly string[], patterns: readonly string[], weightMapFiles?: ReadonlySet<string>): string[] {
  return siblings.filter((f) => {
    if (!isSafeRepoPath(f) || !matchesAny(f, patterns)) return false;
    if (weightMapFiles !== undefined && f.endsWith('.safetensors')) return weightMapFiles.has(f);
    return true;
  });
}
