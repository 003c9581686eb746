import type { ForwardInput, LanguageModel, SequenceState } from '@mlxcel/tensor';

/** State of the toy model: the ids seen so far (so trim really drops state). */
export class ToyState implements SequenceState {
  ids: number[] = [];
  get offset(): number {
    return this.ids.length;
  }
  get nbytes(): number {
    return this.ids.length * 4;
  }
  trim(n: number): number {
    const d = Math.min(n, this.ids.length);
    this.ids.length -= d;
    return d;
  }
}

/**
 * A deterministic "model" for testing the generation loop: the next-token logits depend on the last
 * token and the position only, so chunking and incremental decoding must give identical results.
 * `script` maps position -> the token to make most likely (falls back to (last * 7 + 3) % V).
 */
export class ToyModel implements LanguageModel {
  readonly modelType = 'toy';
  readonly config = {};
  readonly numLayers = 1;
  readonly hiddenSize = 1;
  readonly prefillChunk: number | null = 4;
  readonly stats = { parameters: 0, weightBytes: 0 };
  forwardCalls: number[] = [];
  constructor(readonly vocabSize: number, readonly maxContext = 1024, private readonly script: Record<number, number> = {}, private readonly suppressed: number[] = []) {}
  newState(): SequenceState {
    return new ToyState();
  }
  suppressedTokenIds(): Int32Array {
    return Int32Array.from(this.suppressed);
  }
  forward(batch: ForwardInput[], opts: { logits?: 'all' | 'last' } = {}): Float32Array[] {
    return batch.map(({ ids, state }) => {
      const st = state as ToyState;
      this.forwardCalls.push(ids.length);
      const rows: Float32Array[] = [];
      for (const id of ids) {
        st.ids.push(id);
        const pos = st.ids.length; // position of the token to predict
        const row = new Float32Array(this.vocabSize);
        for (let v = 0; v < this.vocabSize; v++) row[v] = -((v * 31 + id * 17 + pos) % 13) / 4;
        const want = this.script[pos] ?? (id * 7 + 3) % this.vocabSize;
        row[want] = 5;
        rows.push(row);
      }
      const keep = opts.logits === 'last' ? rows.slice(-1) : rows;
      const out = new Float32Array(keep.length * this.vocabSize);
      keep.forEach((r, i) => out.set(r, i * this.vocabSize));
      return out;
    });
  }
}
