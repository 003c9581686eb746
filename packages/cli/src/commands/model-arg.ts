/** Resolves --model / --demo into a loaded model, with download progress on the way. */
import { ensureDemoModel, loadModel, type DownloadProgress, type LoadedModel } from '@mlxcel/engine';
import { weightArena } from '@mlxcel/tensor';
import { UsageError } from '../errors.js';
import { info, Progress, yellow } from '../ui/output.js';

export interface ModelFlags {
  model?: string;
  demo?: boolean;
  /** A file from --chat-template, or false from --no-chat-template (commander shares the key). */
  chatTemplate?: string | false;
  /** commander's `--no-vision` sets vision: false. */
  vision?: boolean;
  /** --check-weights: scan the checkpoint for NaN/Inf weights at load. */
  checkWeights?: boolean;
}

export async function openModel(o: ModelFlags): Promise<LoadedModel> {
  let spec = o.model;
  if (!spec) {
    if (!o.demo) throw new UsageError('--model is required (a model folder or a Hugging Face repo id such as mlx-community/gemma-3n-E2B-it-4bit), or pass --demo');
    spec = ensureDemoModel();
    info(yellow('mlxcel demo: a tiny Phi-3-architecture model with RANDOM weights — the text below is meaningless by design.'));
    info(yellow('Pass --model <folder | org/repo> to run a real checkpoint.'));
  }
  const bars = new Map<string, Progress>();
  const copied0 = weightArena.bytes, t0 = performance.now();
  const loaded = await loadModel(spec, {
    chatTemplateFile: typeof o.chatTemplate === 'string' ? o.chatTemplate : undefined,
    noVision: o.vision === false,
    checkWeights: o.checkWeights === true,
    onProgress: (p: DownloadProgress) => {
      let bar = bars.get(p.file);
      if (!bar) bars.set(p.file, (bar = new Progress(`downloading ${p.file}`)));
      const total = p.total ?? p.downloaded;
      bar.update(p.done ? total : p.downloaded, total);
    },
  });
  // Resident weights are copied at load (--weight-memory): say so when that made the load noticeably long.
  const copied = weightArena.bytes - copied0, seconds = (performance.now() - t0) / 1000;
  if (copied > 0 && seconds >= 1)
    info(`loaded in ${seconds.toFixed(1)} s, ${(copied / 1e9).toFixed(2)} GB of weights copied into huge-page memory for faster decode (--weight-memory mapped reads them from the file instead)`);
  return loaded;
}
