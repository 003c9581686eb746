/**
 * Φ⁻¹ for Gemma 3n's activation sparsity (the Gaussian top-k cutoff z = Φ⁻¹(sparsity) of
 * `Gemma3nTextMLP._gaussian_topk`, where HF calls torch.distributions.Normal.icdf). Double precision,
 * computed once per layer at load.
 */

/** Φ⁻¹(p), the standard normal quantile (Acklam's rational approximation refined by Newton steps). */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError(`normalQuantile: p must be in (0, 1), got ${p}`);
  const a = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
  const b = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
  const c = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
  const d = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
  const lo = 0.02425;
  let x: number;
  if (p < lo) {
    const q = Math.sqrt(-2 * Math.log(p));
    x = (((((c[0]! * q + c[1]!) * q + c[2]!) * q + c[3]!) * q + c[4]!) * q + c[5]!) / ((((d[0]! * q + d[1]!) * q + d[2]!) * q + d[3]!) * q + 1);
  } else if (p > 1 - lo) {
    const q = Math.sqrt(-2 * Math.log(1 - p));
    x = -(((((c[0]! * q + c[1]!) * q + c[2]!) * q + c[3]!) * q + c[4]!) * q + c[5]!) / ((((d[0]! * q + d[1]!) * q + d[2]!) * q + d[3]!) * q + 1);
  } else {
    const q = p - 0.5, r = q * q;
    x = ((((((a[0]! * r + a[1]!) * r + a[2]!) * r + a[3]!) * r + a[4]!) * r + a[5]!) * q) /
      (((((b[0]! * r + b[1]!) * r + b[2]!) * r + b[3]!) * r + b[4]!) * r + 1);
  }
  // Two Newton steps against a full-precision Φ take Acklam's ~1e-9 start to double precision.
  for (let it = 0; it < 2; it++) x -= (normalCdf(x) - p) * Math.sqrt(2 * Math.PI) * Math.exp((x * x) / 2);
  return x;
}

/** Φ(x) = (1 + erf(x/√2)) / 2 with erf from its all-positive series erf(y) = 2/√π · e^(−y²) · Σ 2ⁿ y^(2n+1) / (2n+1)!!. */
function normalCdf(x: number): number {
  const y = Math.abs(x) / Math.SQRT2;
  let term = y, sum = y;
  for (let n = 1; n < 500 && term > sum * 1e-17; n++) {
    term *= (2 * y * y) / (2 * n + 1);
    sum += term;
  }
  const erf = Math.min(1, (2 / Math.sqrt(Math.PI)) * Math.exp(-y * y) * sum);
  return x >= 0 ? 0.5 * (1 + erf) : 0.5 * (1 - erf);
}
