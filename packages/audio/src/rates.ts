/**
 * The sample rates audio input may have: 4 kHz to 768 kHz.
 * - Every real recording format lies inside: telephony 8 kHz, legacy 5.5125 kHz, CD 44.1 kHz, studio
 *   up to 384 kHz, the fastest DACs 768 kHz.
 * - The resampler's cost per output sample grows with the rate ratio, and upsampling from a tiny rate
 *   multiplies the sample count: a WAV declaring 1 Hz turned 200 samples into 3.2 M outputs and took
 *   12 s. At 4 kHz -> 16 kHz (x4) or 768 kHz -> 16 kHz (/48) both stay linear-time and fast.
 * - A header declaring 4 GHz is corrupt, not audio ("the waveform is empty" was the old symptom).
 */
import { MlxcelError } from '@mlxcel/tensor';

export const MIN_SAMPLE_RATE = 4000;
export const MAX_SAMPLE_RATE = 768000;

/** Throws `code` (E_WAV_RATE for files, E_ARG for calls) unless `rate` is an integer in range. */
export function checkSampleRate(rate: number, where: string, code = 'E_ARG'): void {
  if (!Number.isInteger(rate) || rate < MIN_SAMPLE_RATE || rate > MAX_SAMPLE_RATE)
    throw new MlxcelError(code, `${where} ${rate} Hz is outside the supported ${MIN_SAMPLE_RATE}..${MAX_SAMPLE_RATE} Hz`);
}
