/** The CLI downloads a repo id from a hub (a local server here) into the HF cache, then works offline. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeHub } from '../../engine/test/helpers/fake-hub.js';
import { FIXTURES, mlxcel } from './helpers.js';

describe('hub download', () => {
  const cache = mkdtempSync(join(tmpdir(), 'mlxcel-hf-'));
  const hub = new FakeHub(join(FIXTURES, 'phi3-tiny-short'), { repoId: 'test-org/phi3-tiny', commit: 'a'.repeat(40), token: 'sekret' });
  beforeAll(async () => void (await hub.start()));
  afterAll(async () => hub.close());

  it('downloads into the HF cache layout, then loads offline', async () => {
    const env = { HF_ENDPOINT: hub.url, HF_HUB_CACHE: cache, HF_TOKEN: 'sekret' };
    const first = await mlxcel(['inspect', '--model', 'test-org/phi3-tiny', '--json'], { env });
    expect(first.stderr).not.toMatch(/mlxcel:/);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout).modelType).toBe('phi3');
    expect(JSON.parse(first.stdout).dir).toContain(join(cache, 'models--test-org--phi3-tiny', 'snapshots'));
    const before = hub.requests.length;
    const offline = await mlxcel(['inspect', '--model', 'test-org/phi3-tiny', '--json'], { env: { ...env, HF_HUB_OFFLINE: '1' } });
    expect(offline.code).toBe(0);
    expect(hub.requests.length).toBe(before);
  });

  it('offline with no cache is a clear error', async () => {
    const r = await mlxcel(['inspect', '--model', 'test-org/other'], { env: { HF_ENDPOINT: hub.url, HF_HUB_CACHE: mkdtempSync(join(tmpdir(), 'mlxcel-hf-')), HF_HUB_OFFLINE: '1' } });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/^mlxcel: .*offline/im);
  });
});
