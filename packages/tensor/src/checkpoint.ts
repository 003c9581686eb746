/**
 * A checkpoint folder: config.json plus one or more safetensors files. With
 * model.safetensors.index.json the index is authoritative (a listed file that is missing, or a tensor
 * claimed by two shards, is an error); without it every model*.safetensors file is opened.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { MlxcelError } from './errors.js';
import { assertRegularFile, confinedPath, readRegularFile } from './files.js';
import { SafetensorsFile } from './safetensors.js';
import type { Tensor } from './tensor.js';

export interface WeightStore {
  has(name: string): boolean;
  get(name: string): Tensor;
  keys(): string[];
}

export class Checkpoint implements WeightStore {
  private constructor(
    readonly dir: string,
    readonly files: SafetensorsFile[],
    private readonly where: Map<string, SafetensorsFile>,
  ) {}

  static open(dir: string): Checkpoint {
    const indexPath = join(dir, 'model.safetensors.index.json');
    let names: string[];
    const claimed = new Map<string, string>();
    if (existsSync(dir) && !statSync(dir).isDirectory())
      throw new MlxcelError('E_FILE', `checkpoint folder ${dir} is not a directory`);
    if (existsSync(indexPath)) {
      let index: { weight_map?: Record<string, string> };
      const text = readRegularFile(indexPath, 'checkpoint index', 'utf8');
      try {
        index = JSON.parse(text);
      } catch (e) {
        throw new MlxcelError('E_CHECKPOINT', `${indexPath}: not valid JSON (${(e as Error).message})`);
      }
      if (!index.weight_map || typeof index.weight_map !== 'object' || Array.isArray(index.weight_map))
        throw new MlxcelError('E_CHECKPOINT', `${indexPath}: missing "weight_map" (an object of tensor name -> shard file)`);
      for (const [t, f] of Object.entries(index.weight_map)) {
        if (typeof f !== 'string')
          throw new MlxcelError('E_CHECKPOINT', `${indexPath}: weight_map["${t}"] must be a shard file name (a string), got ${JSON.stringify(f)}`);
        confinedPath(dir, f, `${indexPath}: weight_map["${t}"]`);
        claimed.set(t, f);
      }
      names = [...new Set(Object.values(index.weight_map))].sort();
      for (const f of names)
        if (!existsSync(join(dir, f))) {
          const held = [...claimed].filter(([, file]) => file === f).map(([t]) => t);
          throw new MlxcelError(
            'E_MISSING_SHARD',
            `${dir}: shard ${f} listed in model.safetensors.index.json is missing (it holds ${held.length} tensor(s), e.g. ${held[0]})`,
          );
        }
    } else {
      if (!existsSync(dir)) throw new MlxcelError('E_FILE', `checkpoint folder ${dir} does not exist`);
      names = readdirSync(dir).filter((f) => /^model.*\.safetensors$/.test(f)).sort();
      if (names.length === 0) throw new MlxcelError('E_CHECKPOINT', `${dir}: no model*.safetensors files`);
    }
    const files = names.map((f) => {
      assertRegularFile(join(dir, f), 'safetensors shard');
      return SafetensorsFile.open(join(dir, f));
    });
    const where = new Map<string, SafetensorsFile>();
    for (const file of files)
      for (const name of file.tensors.keys()) {
        const prev = where.get(name);
        if (prev) throw new MlxcelError('E_CHECKPOINT', `${dir}: tensor ${name} appears in both ${prev.path} and ${file.path}`);
        where.set(name, file);
      }
    for (const [t, f] of claimed) {
      const file = where.get(t);
      if (!file) throw new MlxcelError('E_MISSING_TENSOR', `${dir}: tensor ${t} listed in the index (in ${f}) is in no shard`);
    }
    return new Checkpoint(dir, files, where);
  }

  has(name: string): boolean {
    return this.where.has(name);
  }

  get(name: string): Tensor {
    const f = this.where.get(name);
    if (!f) throw new MlxcelError('E_MISSING_TENSOR', `${this.dir}: missing tensor ${name}`);
    return f.get(name);
  }

  keys(): string[] {
    return [...this.where.keys()];
  }
}

/** An in-memory weight store (tests, random-weight models, converted weights). */
export class MemoryWeights implements WeightStore {
  constructor(private readonly map: Map<string, Tensor> = new Map()) {}
  has(name: string): boolean {
    return this.map.has(name);
  }
  get(name: string): Tensor {
    const t = this.map.get(name);
    if (!t) throw new MlxcelError('E_MISSING_TENSOR', `missing tensor ${name}`);
    return t;
  }
  set(name: string, t: Tensor): void {
    this.map.set(name, t);
  }
  keys(): string[] {
    return [...this.map.keys()];
  }
}

/** A view of a store with renamed keys (prefix stripping, HF <-> MLX name maps). */
export class RenamedWeights implements WeightStore {
  constructor(private readonly inner: WeightStore, private readonly rename: (name: string) => string | undefined) {
    for (const k of inner.keys()) {
      const r = rename(k);
      if (r !== undefined) this.map.set(r, k);
    }
  }
  private readonly map = new Map<string, string>();
  has(name: string): boolean {
    return this.map.has(name);
  }
  get(name: string): Tensor {
    const k = this.map.get(name);
    if (k === undefined) throw new MlxcelError('E_MISSING_TENSOR', `missing tensor ${name}`);
    return this.inner.get(k);
  }
  keys(): string[] {
    return [...this.map.keys()];
  }
}
