import { MlxcelError } from '../errors.js';

export interface RepoRef {
  /** `org/name` (or a bare `name` for the few canonical repos without an owner). */
  repoId: string;
  /** Branch, tag or commit; `main` when not given. */
  revision: string;
}

const PART = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9_])?$/;

/**
 * Parse `org/name` with an optional `@revision` (`google/gemma-3n-E2B-it@main`,
 * `mlx-community/phi-3@refs/pr/3`, `org/name@<40-hex commit>`).
 * Throws `HUB_REPO_ID_INVALID` naming the bad input.
 */
export function parseRepoId(spec: string): RepoRef {
  const at = spec.indexOf('@');
  const repoId = at < 0 ? spec : spec.slice(0, at);
  const revision = at < 0 ? 'main' : spec.slice(at + 1);
  const parts = repoId.split('/');
  const ok =
    parts.length >= 1 &&
    parts.length <= 2 &&
    parts.every((p) => PART.test(p) && !p.includes('--') && !p.includes('..') && p.length <= 96);
  if (!ok) {
    throw new MlxcelError('HUB_REPO_ID_INVALID', `"${spec}" is not a Hugging Face repo id: expected org/name or org/name@revision`);
  }
  if (revision.length === 0 || revision.includes('..') || /[\s\\]/.test(revision) || revision.startsWith('/')) {
    throw new MlxcelError('HUB_REPO_ID_INVALID', `"${spec}" has an invalid revision "${revision}"`);
  }
  return { repoId, revision };
}

/** Whether a string is shaped like a repo id (so `loadModel` can tell it from a path). */
export function looksLikeRepoId(spec: string): boolean {
  if (spec.startsWith('.') || spec.startsWith('/') || spec.startsWith('~') || spec.includes('\\')) return false;
  try {
    return parseRepoId(spec).repoId.includes('/');
  } catch {
    return false;
  }
}

/** The cache folder name of a model repo: `models--{org}--{name}`. */
export function repoFolderName(repoId: string): string {
  return `models--${repoId.split('/').join('--')}`;
}

/** Whether a revision is a full commit hash. */
export function isCommitHash(revision: string): boolean {
  return /^[0-9a-f]{40}$/.test(revision);
}
