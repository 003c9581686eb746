/**
 * The child process that runs fuzz cases. The runner forks it with a heap limit, sends one case at a
 * time over IPC (structured clone, so typed arrays, NaN and bigint travel as they are) and kills it on
 * a timeout or when its resident memory passes the limit; a crash takes only this process down.
 */
import * as native from '@mlxcel/core-native';
import { loadAudio } from '@mlxcel/audio';
import { ChatTemplate, loadModelFromDir, loadTokenizer, promptIds, type LoadedModel } from '@mlxcel/engine';
import type { CaseResult, FuzzCase } from './types.js';

type Executor = (args: any) => string | void;  // returns a "wrong output" description, or nothing

const executors: Record<string, Executor> = {
  /** One native call: `fn(...args)`; any output Float32Array must not gain non-finite values from finite inputs. */
  native({ fn, args }: { fn: string; args: unknown[] }) {
    const f = (native as unknown as Record<string, (...a: unknown[]) => unknown>)[fn] ?? (native.default as any)[fn];
    f(...args);
  },

  /** NaN through every unary op, softmax and clamp, in every ISA variant: NaN must come out as NaN. */
  nanprop() {
    const x = new Float32Array(37).map((_, i) => (i - 18) / 4);
    x[3] = NaN;
    x[35] = NaN;
    const initial = native.cpuInfo().isa;
    try {
      for (const isa of native.cpuInfo().variants) {
        native.setIsa(isa);
        for (const [name, op] of Object.entries(native.UnaryOp)) {
          if (name === 'NEG' || name === 'SQUARE' || name === 'SQRT') continue;
          const out = new Float32Array(x.length);
          native.unary(op, x, out);
          if (!Number.isNaN(out[3]!) || !Number.isNaN(out[35]!)) return `${isa}: ${name}(NaN) = ${out[3]}, ${out[35]}`;
        }
        const sm = new Float32Array(x.length);
        native.softmax(x, 1, x.length, sm);
        if (!sm.every(Number.isNaN)) return `${isa}: softmax of a row with NaN is not NaN`;
      }
    } finally {
      native.setIsa(initial);
    }
  },

  /** Load a model folder (optionally scanning weights) and run one forward over a few ids. */
  load({ dir, checkWeights, ids }: { dir: string; checkWeights?: boolean; ids?: number[] }) {
    const loaded = loadModelFromDir(dir, { checkWeights, tokenizer: 'none' });
    const state = loaded.model.newState();
    const input = Int32Array.from(ids ?? [1, 2, 3]);
    const logits = loaded.model.forward([{ ids: input, state }], { logits: 'last' })[0]!;
    for (let i = 0; i < logits.length; i++) if (!Number.isFinite(logits[i]!)) return `logit ${i} is ${logits[i]}`;
    if (logits.length !== loaded.model.vocabSize) return `${logits.length} logits for vocabulary ${loaded.model.vocabSize}`;
  },

  /** Load a tokenizer folder; encode and decode a sample; plain ASCII must round-trip. */
  tokenizer({ dir, text }: { dir: string; text: string }) {
    const t = loadTokenizer(dir);
    const ids = t.encode(text, { addSpecialTokens: false });
    if (ids.length === 0 && text.length > 0) return 'encoded to no tokens';
    const back = t.decode(ids);
    if (back.trim() !== text.trim()) return `round trip gave ${JSON.stringify(back.slice(0, 60))}`;
  },

  /** Render a chat template over messages. */
  template({ source, messages, limits }: { source: string; messages: unknown; limits?: Record<string, number> }) {
    const out = new ChatTemplate(source, 'fuzz.jinja').render(messages as never, { limits });
    if (typeof out !== 'string') return 'render returned a non-string';
  },

  /** Decode a WAV file (path or bytes) to 16 kHz mono; the samples must be finite. */
  wav({ src }: { src: string | Uint8Array }) {
    const a = loadAudio(src);
    for (let i = 0; i < a.samples.length; i++) if (!Number.isFinite(a.samples[i]!)) return `sample ${i} is ${a.samples[i]}`;
  },

  /** Library token ids through promptIds against a vocabulary of `vocab`. */
  ids({ ids, vocab }: { ids: unknown; vocab: number }) {
    const loaded = { dir: 'fuzz', model: { vocabSize: vocab }, tokenizer: null, chatTemplate: null } as unknown as LoadedModel;
    const out = promptIds(loaded, ids as never);
    for (const id of out) if (id < 0 || id >= vocab) return `id ${id} escaped the vocabulary`;
  },
};

function run(c: FuzzCase): CaseResult {
  const exec = executors[c.op];
  if (!exec) return { ok: false, name: 'Error', message: `fuzz: no executor ${c.op}` };
  try {
    const wrong = exec(c.args);
    return wrong ? { ok: true, wrong } : { ok: true };
  } catch (e) {
    const err = e as { name?: string; code?: string; message?: string };
    return { ok: false, name: err?.name ?? typeof e, code: err?.code, message: String(err?.message ?? e) };
  }
}

process.on('message', (c: FuzzCase) => {
  process.send!({ id: c.id, result: run(c) });
});
process.send!({ ready: true });
