/**
 * model_type -> architecture. The model packages export their `architectures`; this registry is
 * filled with them at import, and apps may register more.
 */
import type { ArchitectureDef } from '@mlxcel/tensor';
import { architectures as gemma } from '@mlxcel/models-gemma';
import { architectures as phi } from '@mlxcel/models-phi';
import { MlxcelError } from './errors.js';

const registry = new Map<string, ArchitectureDef>();

export function registerArchitecture(def: ArchitectureDef): void {
  for (const t of def.modelTypes) registry.set(t, def);
}

export function supportedModelTypes(): string[] {
  return [...registry.keys()].sort();
}

/** The architecture for a config.json (its `model_type`). */
export function architectureFor(config: Record<string, unknown>, source = 'config.json'): ArchitectureDef {
  const type = config.model_type;
  if (typeof type !== 'string' || !type)
    throw new MlxcelError('MODEL_TYPE_MISSING', `${source} has no "model_type" (supported: ${supportedModelTypes().join(', ')})`);
  const def = registry.get(type);
  if (!def)
    throw new MlxcelError('MODEL_TYPE_UNSUPPORTED', `${source}: model_type "${type}" is not supported (supported: ${supportedModelTypes().join(', ')})`);
  return def;
}

for (const def of [...phi, ...gemma]) registerArchitecture(def);
