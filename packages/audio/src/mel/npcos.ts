/**
 * numpy's float32 cosine (`simd_sincos_f32` in numpy/_core/src/umath/loops_trigonometric, used on every
 * CPU with FMA3/NEON): Cody-Waite reduction by pi/2 and short polynomials, all in float32 with fused
 * multiply-adds. It is not correctly rounded (max 1.49 ulp), and Gemma 3n's extractor builds its Hann
 * window with it; on near-silent bins the mel energy is mostly window sidelobes, so a one-ulp window
 * difference moves ln(mel) by ~1e-2. Reproducing the algorithm makes the window bit-identical.
 */

const f = Math.fround;

/** A C hex-float literal 0x<mant>p<exp> (JS has no syntax for them). */
function hexf(mant: string, exp: number): number {
  const [ip, fp = ''] = mant.split('.');
  return (parseInt(ip! + fp, 16) / 16 ** fp.length) * 2 ** exp;
}

/**
 * float32 fused multiply-add a*b + c with one rounding. The product of two floats is exact in a double;
 * the double sum can round once before the float rounding, so the result is corrected when that first
 * rounding could have moved it across a float rounding boundary.
 */
function fmaF32(a: number, b: number, c: number): number {
  const p = a * b; // exact
  const s = p + c;
  const r = f(s);
  // Error of the double addition (TwoSum); zero means s is exact and r is the correctly rounded result.
  const bb = s - p;
  const err = p - (s - bb) + (c - bb);
  if (err === 0 || r === s) return r;
  // s is a double rounding of the exact sum; if s sits exactly halfway between two floats the tie was
  // created by that rounding, and the exact sum lies on the side given by err.
  const lo = r <= s ? r : prevFloat(r);
  const hi = r <= s ? nextFloat(r) : r;
  const mid = lo + (hi - lo) / 2;
  if (s !== mid) return r;
  return err > 0 ? hi : lo;
}

const buf = new DataView(new ArrayBuffer(4));
function nextFloat(x: number): number {
  buf.setFloat32(0, x);
  const i = buf.getInt32(0);
  buf.setInt32(0, x >= 0 ? i + 1 : i - 1);
  return buf.getFloat32(0);
}
function prevFloat(x: number): number {
  buf.setFloat32(0, x);
  const i = buf.getInt32(0);
  buf.setInt32(0, x > 0 ? i - 1 : x === 0 ? 0x80000001 : i + 1);
  return buf.getFloat32(0);
}

const TWO_OVER_PI = f(hexf('1.45f306', -1));
const PIO2_HI = f(-hexf('1.921fb0', 0));
const PIO2_MED = f(-hexf('1.5110b4', -22));
const PIO2_LO = f(-hexf('1.846988', -48));
const MAGIC = f(hexf('1.8', 23));

// Polynomial coefficients (float32), highest order first.
const COS = [hexf('1.98e616', -16), -hexf('1.6c06dc', -10), hexf('1.55553c', -5), -0.5, 1].map(f);
const SIN = [hexf('1.7d3bbc', -19), -hexf('1.a06bba', -13), hexf('1.11119a', -7), -hexf('1.555556', -3)].map(f);

function cosPoly(x2: number): number {
  let r = fmaF32(COS[0]!, x2, COS[1]!);
  r = fmaF32(r, x2, COS[2]!);
  r = fmaF32(r, x2, COS[3]!);
  return fmaF32(r, x2, COS[4]!);
}

function sinPoly(x: number, x2: number): number {
  let r = fmaF32(SIN[0]!, x2, SIN[1]!);
  r = fmaF32(r, x2, SIN[2]!);
  r = fmaF32(r, x2, SIN[3]!);
  r = fmaF32(r, x2, 0);
  return fmaF32(r, x, x);
}

/** cos(x) for a float32 x exactly as numpy computes it for float32 arrays (|x| <= 71476.0625). */
export function numpyCosF32(x: number): number {
  x = f(x);
  if (!(Math.abs(x) <= 71476.0625)) return f(Math.cos(x)); // numpy falls back to libm out of range
  // The source writes mul then add, but the shipped wheels are compiled with contraction on, so the
  // quadrant is rint via fma(x, 2/pi, magic); near-ties (e.g. x = 5 pi / 4 in float32) depend on it.
  const q = f(fmaF32(x, TWO_OVER_PI, MAGIC) - MAGIC);
  let r = fmaF32(q, PIO2_HI, x);
  r = fmaF32(q, PIO2_MED, r);
  r = fmaF32(q, PIO2_LO, r);
  const r2 = f(r * r);
  const iq = (Math.round(q) + 1) | 0; // q is already an integer
  let v = (iq & 1) === 0 ? sinPoly(r, r2) : cosPoly(r2);
  if ((iq & 2) === 2) v = f(0 - v);
  return v;
}
