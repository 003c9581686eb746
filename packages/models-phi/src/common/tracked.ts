// TrackedWeights moved to @mlxcel/tensor so Gemma shares it (the unused-tensor check at load).
export { TrackedWeights } from '@mlxcel/tensor';
