import { copyFile, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { repoFolderName } from './repo-id.js';

/** The environment variables the hub code reads (a subset of `process.env`). */
export type HubEnv = Readonly<Record<string, string | undefined>>;

/**
 * The Hugging Face hub cache folder, as huggingface_hub resolves it:
 * `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `$XDG_CACHE_HOME/huggingface/hub`,
 * else `~/.cache/huggingface/hub`.
 */
export function resolveHubCacheDir(env: HubEnv = process.env): string {
  if (env.HF_HUB_CACHE) return env.HF_HUB_CACHE;
  if (env.HF_HOME) return join(env.HF_HOME, 'hub');
  if (env.XDG_CACHE_HOME) return join(env.XDG_CACHE_HOME, 'huggingface', 'hub');
  return join(homedir(), '.cache', 'huggingface', 'hub');
}

/** `HF_HUB_OFFLINE` is on when it is 1 / true / yes / on (case-insensitive). */
export function isOfflineEnv(env: HubEnv = process.env): boolean {
  return ['1', 'true', 'yes', 'on'].includes((env.HF_HUB_OFFLINE ?? '').trim().toLowerCase());
}

/**
 * Paths of one repo in the cache:
 * ```
 * models--org--name/
 *   blobs/<etag>                 file contents, named by ETag (sha256 for LFS files, git sha1 otherwise)
 *   blobs/<etag>.incomplete      a download in progress (resumed with an HTTP Range request)
 *   refs/<revision>              the commit a branch or tag pointed to when last resolved
 *   snapshots/<commit>/<file>    relative symlinks into ../../blobs
 * ```
 */
export class RepoCache {
  readonly root: string;

  constructor(cacheDir: string, repoId: string) {
    this.root = join(cacheDir, repoFolderName(repoId));
  }

  blobPath(etag: string): string {
    return join(this.root, 'blobs', etag);
  }

  incompletePath(etag: string): string {
    return `${this.blobPath(etag)}.incomplete`;
  }

  snapshotDir(commit: string): string {
    return join(this.root, 'snapshots', commit);
  }

  snapshotPath(commit: string, file: string): string {
    return join(this.snapshotDir(commit), ...file.split('/'));
  }

  refPath(revision: string): string {
    return join(this.root, 'refs', ...revision.split('/'));
  }

  /** The commit recorded for a branch/tag, or `undefined`. */
  async readRef(revision: string): Promise<string | undefined> {
    const path = this.refPath(revision);
    if (!existsSync(path)) return undefined;
    const commit = (await readFile(path, 'utf8')).trim();
    return commit.length > 0 ? commit : undefined;
  }

  async writeRef(revision: string, commit: string): Promise<void> {
    const path = this.refPath(revision);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, commit);
  }

  /**
   * Point `snapshots/<commit>/<file>` at `blobs/<etag>` with a relative symlink (so the
   * cache folder can move), replacing what was there; falls back to a copy where symlinks
   * are not allowed.
   */
  async linkSnapshot(commit: string, file: string, etag: string): Promise<void> {
    const link = this.snapshotPath(commit, file);
    const blob = this.blobPath(etag);
    await mkdir(dirname(link), { recursive: true });
    await rm(link, { force: true });
    try {
      await symlink(relative(dirname(link), blob), link);
    } catch {
      await copyFile(blob, link);
    }
  }
}
