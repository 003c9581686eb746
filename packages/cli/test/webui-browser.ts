/**
 * Test plumbing for the chat-page browser tests: a spawned `mlxcel serve --demo` on loopback and a
 * headless Debian Chromium driven by playwright-core.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { BIN } from './helpers.js';

/** Debian's chromium package (.ci/run installs it); MLXCEL_CHROMIUM points elsewhere. */
export const CHROMIUM = process.env.MLXCEL_CHROMIUM ?? '/usr/bin/chromium';

export interface Served {
  url: string;
  stop(): Promise<void>;
}

/** Starts `mlxcel serve --demo --port 0 ...extra` and resolves with its base URL (`http://host:port/`) once it listens. */
export function serveDemo(extra: string[] = []): Promise<Served> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, [BIN, 'serve', '--demo', '--port', '0', ...extra], {
      env: { ...process.env, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`mlxcel serve did not start in 30 s:\n${log}`));
    }, 30_000);
    const onData = (d: Buffer) => {
      log += d.toString();
      const m = /serving .* on (http:\/\/[^/\s]+)\/v1/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve({
          url: `${m[1]!}/`,
          stop: () => new Promise((done) => {
            if (child.exitCode !== null) return done();
            child.once('exit', () => done());
            child.kill('SIGTERM');
          }),
        });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`mlxcel serve exited with ${code}:\n${log}`));
    });
  });
}

/**
 * Headless Chromium with nothing that reaches the network on its own. playwright-core's launch() gives
 * the browser a fresh temporary --user-data-dir itself (and refuses one in args), and each test opens its
 * own browser context, so no storage carries over between runs or tests.
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`no Chromium at ${CHROMIUM}: install Debian's package (apt-get install -y chromium) or set MLXCEL_CHROMIUM`);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
}

/** Every console error and uncaught exception of a page, for the "no console errors" checks. */
export function collectErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(`uncaught: ${e.message}`));
  return errors;
}
