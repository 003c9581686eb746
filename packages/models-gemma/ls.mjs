import { Checkpoint } from '@mlxcel/tensor';
const ck = Checkpoint.open(process.argv[2]);
const seen = new Set();
for (const k of ck.keys().sort()) { const t = ck.get(k); const kk = k.replace(/layers\.(\d+)\./, (m, n) => Number(n) <= 0 || Number(n)===5 ? m : 'layers.N.'); if (seen.has(kk)) continue; seen.add(kk); console.log(kk, t.dtype, JSON.stringify(t.shape)); }
