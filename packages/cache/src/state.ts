/**
 * A sequence's caches (one per layer) detached and adopted as a whole. Shared layers carry no data:
 * they record which layer they read, and adopting checks that the target reads the same one.
 */
import { MlxcelError } from '@mlxcel/tensor';
import type { DetachedCache, LayerCache } from './types.js';
import type { SharedCache } from './shared.js';

export interface DetachedSequence {
  readonly version: 1;
  layers: DetachedCache[];
  /** For each layer, the index of the layer whose KV it reads (itself when it owns its cache). */
  sources: number[];
}

/** Index of the layer whose storage `layers[i]` reads. */
export function sourceOf(layers: readonly LayerCache[], i: number): number {
  const c = layers[i]!;
  if (c.kind !== 'shared') return i;
  const owner = (c as SharedCache).owner;
  const j = layers.indexOf(owner);
  if (j < 0) throw new MlxcelError('E_CACHE_STATE', `layer ${i}: its shared cache reads a cache that is not one of these layers`);
  return j;
}

export function snapshotLayers(layers: readonly LayerCache[]): DetachedSequence {
  return { version: 1, layers: layers.map((c) => c.snapshot()), sources: layers.map((_, i) => sourceOf(layers, i)) };
}

/** Snapshot then empty every cache. */
export function detachLayers(layers: readonly LayerCache[]): DetachedSequence {
  const s = snapshotLayers(layers);
  for (const c of layers) if (c.kind !== 'shared') c.detach();
  return s;
}

/** All or nothing: the layout is checked first, and a layer that still refuses rolls every layer back. */
export function adoptLayers(layers: readonly LayerCache[], state: DetachedSequence): void {
  if (!state || state.version !== 1 || !Array.isArray(state.layers))
    throw new MlxcelError('E_CACHE_ADOPT', 'adoptLayers: not a detached sequence state (version 1)');
  if (state.layers.length !== layers.length)
    throw new MlxcelError('E_CACHE_ADOPT', `adoptLayers: state has ${state.layers.length} layers, this sequence ${layers.length}`);
  layers.forEach((c, i) => {
    const s = state.layers[i]!;
    if (s.kind !== c.kind) throw new MlxcelError('E_CACHE_ADOPT', `adoptLayers: layer ${i} is ${s.kind} in the state, ${c.kind} here`);
    if (state.sources[i] !== sourceOf(layers, i))
      throw new MlxcelError('E_CACHE_ADOPT', `adoptLayers: layer ${i} reads layer ${state.sources[i]} in the state, layer ${sourceOf(layers, i)} here`);
  });
  const before = layers.map((c) => c.snapshot());
  try {
    layers.forEach((c, i) => c.adopt(state.layers[i]!));
  } catch (e) {
    layers.forEach((c, i) => c.adopt(before[i]!));
    throw e;
  }
}
