export { parseRepoId, looksLikeRepoId, repoFolderName, isCommitHash, type RepoRef } from './repo-id.js';
export { resolveHubCacheDir, isOfflineEnv, RepoCache, type HubEnv } from './cache.js';
export { HubClient, normalizeEtag, type HubClientOptions, type FileMetadata, type ModelInfo } from './client.js';
export { DEFAULT_ALLOW_PATTERNS, selectFiles, matchesAny } from './files.js';
export {
  downloadModel,
  resolveModelPath,
  type DownloadModelOptions,
  type DownloadProgress,
  type DownloadedModel,
} from './download.js';
