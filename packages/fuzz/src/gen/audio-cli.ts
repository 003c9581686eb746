/**
 * WAV files with mutated headers (sample rate, channels, widths, sizes), and CLI invocations with bad
 * flags, files and environment variables. CLI cases run the built `mlxcel` binary as a child process.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeWav } from '@mlxcel/audio';
import type { Expect, FuzzCase } from '../types.js';
import { FIXTURES, scratchRoot, variant } from './fs-util.js';

const tone = (n: number) => Float32Array.from({ length: n }, (_, i) => 0.5 * Math.sin(i / 5));

function wavCases(): FuzzCase[] {
  const out: FuzzCase[] = [];
  const base = () => encodeWav(tone(400), { sampleRate: 16000 });
  const add = (id: string, bytes: Uint8Array | string, expect: Expect) => out.push({ id: `wav/${id}`, cls: 'wav', op: 'wav', args: { src: bytes }, expect });
  const patch = (id: string, at: number, width: 2 | 4, value: number, expect: Expect) => {
    const b = base();
    const dv = new DataView(b.buffer);
    if (width === 2) dv.setUint16(at, value, true);
    else dv.setUint32(at, value >>> 0, true);
    add(id, b, expect);
  };
  for (const rate of [0, 1, 100, 3999, 768001, 4_000_000_000, 0xffffffff]) patch(`rate-${rate}`, 24, 4, rate, { error: 'E_WAV_RATE' });
  for (const rate of [4000, 8000, 11025, 22050, 44100, 48000, 96000, 192000, 768000]) patch(`rate-${rate}`, 24, 4, rate, { ok: true });
  patch('channels-0', 22, 2, 0, { error: 'E_WAV_CHANNELS' });
  patch('channels-65535', 22, 2, 65535, { error: '*', message: /block|align|channel|fmt/i });
  for (const bits of [0, 4, 12, 20, 33, 64]) patch(`pcm-bits-${bits}`, 34, 2, bits, { error: '*', message: /bits|width|align|fmt/i });
  patch('codec-mp3', 20, 2, 0x55, { error: 'E_WAV_UNSUPPORTED' });
  patch('fmt-size-huge', 16, 4, 0x7fffffff, { error: '*', message: /chunk|fmt|size|truncated/i });
  patch('riff-size-huge', 4, 4, 0xffffffff, { cleanErrorOrOk: /RIFF|size|chunk/i });
  patch('data-size-huge', 40, 4, 0xfffffff0, { cleanErrorOrOk: /data|chunk|size|truncated/i });
  const b = base();
  add('truncated-header', b.subarray(0, 20), { error: '*', message: /truncated|RIFF|short|fmt|bytes/i });
  add('truncated-data', b.subarray(0, 60), { cleanErrorOrOk: /truncated|data|chunk/i });
  add('not-riff', Uint8Array.from(b).fill(0x41, 0, 4), { error: '*', message: /RIFF|WAV/i });
  add('empty', new Uint8Array(0), { error: '*', message: /truncated|empty|RIFF|bytes/i });
  const dir = scratchRoot();
  add('directory', dir, { error: 'E_FILE', message: /is a directory/ });
  const fifoDir = variant('phi3-tiny-short', { 'a.wav': 'fifo' });
  add('fifo', join(fifoDir, 'a.wav'), { error: 'E_FILE', message: /FIFO/ });
  add('missing', join(dir, 'nope.wav'), { error: 'E_FILE', message: /does not exist/ });
  return out;
}

function cliCases(full: boolean): FuzzCase[] {
  const out: FuzzCase[] = [];
  const model = join(FIXTURES, 'phi3-tiny-short');
  const tmp = scratchRoot();
  const cache = { MLXCEL_CACHE: join(tmp, 'cli-cache') };
  const add = (id: string, argv: string[], expect: Expect, env: Record<string, string> = {}, ci = true) => {
    if (ci || full) out.push({ id: `cli/${id}`, cls: 'cli', op: 'cli', args: { argv, env: { ...cache, ...env } }, expect, timeoutMs: 60_000 });
  };
  const fail = (re: RegExp): Expect => ({ exit: 1, stderr: re });
  add('isa-bogus', ['inspect', '--model', model], fail(/MLXCEL_ISA="bogus" is not a kernel variant/), { MLXCEL_ISA: 'bogus' });
  for (const v of ['0', '-1', 'abc', '1025', '1e9', '3.5'])
    add(`threads-${v}`, ['inspect', '--model', model], fail(/MLXCEL_THREADS=".*" must be a whole number/), { MLXCEL_THREADS: v }, v === '0' || v === '1e9');
  add('ids-2^32+1', ['trace', '--model', model, '--ids', '1,4294967297', '--out', join(tmp, 't.safetensors')], fail(/--ids: 4294967297 is outside/));
  add('ids-word', ['trace', '--model', model, '--ids', '1,x', '--out', join(tmp, 't.safetensors')], fail(/--ids: "x" is not a token id/), {}, false);
  add('ids-vocab', ['trace', '--model', model, '--ids', '1,999999', '--out', join(tmp, 't.safetensors')], fail(/outside the vocabulary/), {}, false);
  add('model-missing', ['generate', '--model', join(tmp, 'nope'), '--prompt', 'x'], fail(/nope/), {}, false);
  add('model-is-file', ['generate', '--model', join(model, 'config.json'), '--prompt', 'x'], fail(/config\.json/), {}, false);
  add('prompt-file-dir', ['generate', '--demo', '--prompt-file', tmp], fail(/--prompt-file .* is a directory/));
  add('max-tokens-word', ['generate', '--demo', '--prompt', 'x', '--max-tokens', 'lots'], fail(/--max-tokens/), {}, false);
  add('temperature-nan', ['generate', '--demo', '--prompt', 'x', '--temperature', 'NaN'], fail(/--temperature/), {}, false);
  add('no-chat-template', ['generate', '--demo', '--no-chat-template', '--prompt', 'Hello', '--max-tokens', '2'], { exit: 0 });
  add('chat-template-missing', ['generate', '--demo', '--chat-template', join(tmp, 'none.jinja'), '--prompt', 'x'], fail(/none\.jinja/), {}, false);
  writeFileSync(join(tmp, 'evil.jinja'), '{% for i in range(100000000) %}x{% endfor %}');
  add('chat-template-evil', ['generate', '--demo', '--chat-template', join(tmp, 'evil.jinja'), '--prompt', 'x'], fail(/range\(0, 100000000, 1\) has 100000000 elements/), {}, false);
  add('audio-dir', ['generate', '--demo', '--prompt', 'x', '--audio', tmp], fail(/audio|directory/), {}, false);
  return out;
}

export function audioCliCases(full: boolean): FuzzCase[] {
  return [...wavCases(), ...cliCases(full)];
}
