/// <reference lib="dom" />
// (the page code these tests import, or evaluate in the browser, uses DOM globals)
/**
 * The chat page of `mlxcel serve`, driven in headless Chromium against a spawned server with the demo
 * model (random weights, real Phi-3 tokenizer and chat template): every answer here streams from the
 * real engine, except in the sanitizer and error tests, which replace one response with crafted bytes
 * (page.route) because no model can be made to emit them on demand.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page, Request, Route } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { collectErrors, launchChromium, serveDemo, type Served } from './webui-browser.js';
import { makeGemma4VisionDir } from '../../engine/test/helpers/vision-model.js';

const SCREENSHOTS = fileURLToPath(new URL('../../../docs/images/', import.meta.url));
const DEMO_ID = /demo-phi3-random/;

const API_KEY = 'sesame-42';
let browser: Browser;
/** The plain server, one with --api-key and one with --no-webui, all started at once. */
let served: Served, locked: Served, bare: Served;
const VISION_DIR = makeGemma4VisionDir();
let context: BrowserContext | null = null;

beforeAll(async () => {
  [browser, served, locked, bare] = await Promise.all([launchChromium(), serveDemo(), serveDemo(['--api-key', API_KEY]), serveDemo(['--no-webui'])]);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await Promise.all([served?.stop(), locked?.stop(), bare?.stop()]);
});
afterEach(async () => {
  await context?.close();
  context = null;
});

async function openPage(url: string, viewport = { width: 1280, height: 800 }): Promise<{ page: Page; errors: string[]; requests: Record<string, unknown>[] }> {
  // Reduced motion: no sidebar slide or cursor blink half-way through a screenshot.
  context = await browser.newContext({ viewport, colorScheme: 'light', reducedMotion: 'reduce' });
  const page = await context.newPage();
  const errors = collectErrors(page);
  const requests: Record<string, unknown>[] = [];
  page.on('request', (r: Request) => {
    if (r.url().endsWith('/v1/chat/completions') && r.method() === 'POST') requests.push(r.postDataJSON() as Record<string, unknown>);
  });
  await page.goto(url);
  return { page, errors, requests };
}

/** The header names the demo model (the page polls /health every 2 s while a model loads). */
async function modelShown(page: Page): Promise<void> {
  await expect.poll(() => page.textContent('#model-name'), { timeout: 15_000 }).toMatch(DEMO_ID);
}

async function setSetting(page: Page, field: string, value: string): Promise<void> {
  if (await page.locator('#settings').isHidden()) await page.click('#toggle-settings');
  await page.fill(`#s-${field}`, value);
}

async function sendMessage(page: Page, text: string): Promise<void> {
  await page.fill('#input', text);
  await page.press('#input', 'Enter');
}

/** Waits until the last answer has its usage line (the stream ended) and returns that line. */
async function answerDone(page: Page): Promise<string> {
  const stats = page.locator('.msg.assistant:last-child .stats');
  await expect.poll(() => stats.textContent(), { timeout: 30_000 }).toMatch(/tok\/s|stopped/);
  return (await stats.textContent()) ?? '';
}

describe('chat page of mlxcel serve (headless Chromium, demo model)', () => {
  it('streams token by token, sends the settings, regenerates, and keeps the conversation across a reload', async () => {
    const { page, errors, requests } = await openPage(served.url);
    await modelShown(page);
    // The context length comes from the server's /health.
    const { context_length } = (await (await fetch(`${served.url}health`)).json()) as { context_length: number };
    expect(context_length).toBeGreaterThan(0);
    expect(await page.textContent('#model-ctx')).toBe(`· ${context_length.toLocaleString('en')}-token context`);

    // Record every length the answer's text passes through while it streams.
    await page.evaluate(() => {
      const seen: number[] = [];
      (window as unknown as { seen: number[] }).seen = seen;
      new MutationObserver(() => {
        const body = document.querySelector('.msg.assistant.pending .body');
        if (body && body.textContent!.length !== seen.at(-1)) seen.push(body.textContent!.length);
      }).observe(document.getElementById('messages')!, { subtree: true, childList: true, characterData: true });
    });
    await setSetting(page, 'temperature', '0.5');
    await setSetting(page, 'seed', '7');
    await setSetting(page, 'max_tokens', '40');
    await sendMessage(page, 'Hello there');
    expect(await answerDone(page)).toMatch(/^\d+ prompt \+ 40 generated tokens · \d+(\.\d)? tok\/s · max tokens reached$/);
    const seen = await page.evaluate(() => (window as unknown as { seen: number[] }).seen);
    expect(seen.length).toBeGreaterThanOrEqual(4); // many partial renders, not one final paint
    expect([...seen].sort((a, b) => a - b)).toEqual(seen); // and only growing
    const first = (await page.textContent('.msg.assistant .body'))!;
    expect(first.length).toBeGreaterThan(10);

    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({
      stream: true, stream_options: { include_usage: true }, temperature: 0.5, seed: 7, max_tokens: 40,
      messages: [{ role: 'user', content: 'Hello there' }],
    });
    expect(requests[0]!.model).toMatch(DEMO_ID);

    // A changed temperature goes out with the regenerated answer, which replaces the first one.
    await setSetting(page, 'temperature', '0.2');
    await page.click('.msg.assistant .regenerate');
    await answerDone(page);
    expect(requests).toHaveLength(2);
    expect(requests[1]).toMatchObject({ temperature: 0.2, seed: 7, messages: [{ role: 'user', content: 'Hello there' }] });
    expect(await page.locator('.msg').count()).toBe(2);
    const second = (await page.textContent('.msg.assistant .body'))!;

    // Rename, then reload: the conversation, its answer and its settings come back from localStorage.
    page.once('dialog', (d) => void d.accept('Greetings test'));
    await page.click('#rename-chat');
    await page.reload();
    await expect.poll(() => page.textContent('#conversations [aria-current="true"]')).toBe('Greetings test');
    expect(await page.textContent('.msg.user .body')).toBe('Hello there');
    expect(await page.textContent('.msg.assistant .body')).toBe(second);
    await page.click('#toggle-settings');
    expect(await page.inputValue('#s-temperature')).toBe('0.2');

    // Export as JSON.
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#export-chat')]);
    const exported = JSON.parse(readFileSync((await dl.path())!, 'utf8')) as { conversations: { title: string; messages: unknown[]; settings: { temperature: number } }[] };
    expect(exported.conversations).toHaveLength(1);
    expect(exported.conversations[0]).toMatchObject({ title: 'Greetings test', settings: { temperature: 0.2 } });
    expect(exported.conversations[0]!.messages).toHaveLength(2);

    // Delete: the list is left with one fresh conversation.
    page.once('dialog', (d) => void d.accept());
    await page.click('#delete-chat');
    expect(await page.locator('#conversations li').count()).toBe(1);
    expect(await page.textContent('#conversations li')).toBe('New chat');
    expect(errors).toEqual([]);
  });

  it('stops mid-stream with Esc, keeps the partial answer, and Shift+Enter adds a line instead of sending', async () => {
    const { page, errors, requests } = await openPage(served.url);
    await modelShown(page);
    await page.fill('#input', 'line one');
    await page.press('#input', 'Shift+Enter');
    await page.keyboard.type('line two');
    expect(await page.inputValue('#input')).toBe('line one\nline two');
    expect(requests).toHaveLength(0);

    await setSetting(page, 'max_tokens', '4000');
    await page.press('#input', 'Enter');
    const body = page.locator('.msg.assistant .body');
    await expect.poll(async () => ((await body.textContent()) ?? '').length, { timeout: 20_000 }).toBeGreaterThan(30);
    expect(await page.isVisible('#stop')).toBe(true);
    await page.keyboard.press('Escape');
    expect(await answerDone(page)).toMatch(/stopped/);
    expect(await page.isVisible('#send')).toBe(true);
    const partial = (await body.textContent())!;
    await page.waitForTimeout(400);
    expect(await body.textContent()).toBe(partial); // nothing arrives after Stop
    // The server is free again: a new answer streams to the end.
    await setSetting(page, 'max_tokens', '8');
    await sendMessage(page, 'again');
    expect(await answerDone(page)).toMatch(/8 generated tokens/);
    expect(errors).toEqual([]);

    // Screenshots for the docs: desktop and phone width, light and dark.
    // A fresh conversation with a fixed seed, so the screenshots change little from run to run.
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.click('#new-chat');
    await page.fill('#system-prompt', 'You are a concise assistant.');
    await setSetting(page, 'seed', '1');
    await setSetting(page, 'max_tokens', '48');
    await sendMessage(page, 'Write a haiku about the sea.');
    await answerDone(page);
    await page.locator('#input').blur();
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.setViewportSize({ width: 1280, height: 800 });
      await page.screenshot({ path: `${SCREENSHOTS}webui-desktop-${scheme}.png` });
      await page.setViewportSize({ width: 390, height: 844 });
      await page.screenshot({ path: `${SCREENSHOTS}webui-phone-${scheme}.png` });
    }
  });

  it('renders HTML and scripts in model output as text, never as markup, and runs none of it', async () => {
    const { page, errors } = await openPage(served.url);
    const dialogs: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    const hostile = [
      'Look: <img src=x onerror=alert(1)> and **bold**\n\n',
      '<script>window.pwned = 1; alert(2)</script>\n\n',
      '[click](javascript:alert(3)) ![pic](http://example.invalid/p.png) <a href="javascript:alert(4)">a</a>\n\n',
      '```html\n<script>alert(5)</script>\n```\n',
    ];
    const chunk = (delta: object, extra: object = {}) => `data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: null }], ...extra })}\n\n`;
    await page.route('**/v1/chat/completions', (route) => route.fulfill({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body: hostile.map((t) => chunk({ content: t })).join('') + chunk({}, { usage: { prompt_tokens: 9, completion_tokens: 60 } }) + 'data: [DONE]\n\n',
    }));
    await sendMessage(page, 'say something nasty');
    await expect.poll(() => page.textContent('.msg.assistant .stats')).toMatch(/60 generated tokens/);

    const answer = page.locator('.msg.assistant .body');
    const text = (await answer.textContent())!;
    expect(text).toContain('<img src=x onerror=alert(1)>');
    expect(text).toContain('<script>window.pwned = 1; alert(2)</script>');
    expect(text).toContain('![pic](http://example.invalid/p.png)');
    expect(await answer.locator('strong').textContent()).toBe('bold'); // Markdown itself still renders
    expect(await answer.locator('pre code').textContent()).toBe('<script>alert(5)</script>\n');
    expect(await answer.locator('img, script, iframe, [onerror]').count()).toBe(0);
    expect(await answer.locator('a[href^="javascript"]').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
    expect(dialogs).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('shows loading, then the model and context length from /health, and explains 429, context-too-long, loading and cut-off streams', async () => {
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const errors = collectErrors(page);
    // /health first says the model is loading (503), then reports the model and its context.
    const health = [{ status: 503, json: { status: 'loading' } }, { json: { status: 'ok', model: 'demo-model', context_length: 4096 } }];
    await page.route('**/health', (route) => route.fulfill(health.length > 1 ? health.shift()! : health[0]!));
    const replies: Parameters<Route['fulfill']>[0][] = [
      { status: 429, headers: { 'retry-after': '3' }, json: { error: { message: 'queue is full', type: 'rate_limit_error', param: null, code: 'rate_limit_exceeded' } } },
      { status: 400, json: { error: { message: 'prompt is 5000 tokens, the context holds 4096', type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' } } },
      { status: 503, json: { error: { message: 'model is loading', type: 'server_error', param: null, code: null } } },
      // A stream cut off mid-answer: no finish_reason, no [DONE].
      { status: 200, headers: { 'content-type': 'text/event-stream' }, body: `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'half an ans' }, finish_reason: null }] })}\n\n` },
    ];
    await page.route('**/v1/chat/completions', (route) => route.fulfill(replies.shift()!));
    await page.goto(served.url);
    await expect.poll(() => page.textContent('#model-info')).toMatch(/model loading…/);
    await expect.poll(() => page.textContent('#model-info'), { timeout: 10_000 }).toBe('demo-model · 4,096-token context');

    const lastError = () => page.textContent('.msg.assistant:last-child .error-text');
    await sendMessage(page, 'one');
    await expect.poll(lastError).toMatch(/busy \(429 Too Many Requests\)\. Try again in 3 s\. Server said: queue is full/);
    await page.click('.msg.assistant .regenerate');
    await expect.poll(lastError).toMatch(/too long for the model's context \(400\).*the context holds 4096/);
    await page.click('.msg.assistant .regenerate');
    await expect.poll(lastError).toMatch(/still loading \(503\)/);
    await page.click('.msg.assistant .regenerate');
    await expect.poll(lastError).toMatch(/closed the stream before the answer was finished/);
    expect((await page.textContent('.msg.assistant .body'))!.trim()).toBe('half an ans'); // what arrived is kept
    expect(await page.locator('.msg').count()).toBe(2); // each retry replaced the failed attempt
    // The browser reports each refused request on the console; nothing else may appear there.
    expect(errors.filter((e) => !/status of (429|400|503)/.test(e))).toEqual([]);
  });

  it('asks for the API key of an --api-key server, retries on a wrong one, and keeps it for the tab', async () => {
    expect((await fetch(`${locked.url}v1/models`)).status).toBe(401); // the API is locked; the page is not
    const { page, errors, requests } = await openPage(locked.url);
    const dialog = page.locator('#key-dialog');
    await expect.poll(() => dialog.isVisible()).toBe(true);
    await page.fill('#key-input', 'wrong');
    await page.press('#key-input', 'Enter');
    await expect.poll(() => page.textContent('#key-reason')).toMatch(/refused/);
    await page.fill('#key-input', API_KEY);
    await page.press('#key-input', 'Enter');
    await modelShown(page);
    await setSetting(page, 'max_tokens', '6');
    await sendMessage(page, 'hi');
    expect(await answerDone(page)).toMatch(/6 generated tokens/);
    expect(requests).toHaveLength(1);
    // Reloading the tab reuses the key from sessionStorage: no second prompt.
    await page.reload();
    await modelShown(page);
    expect(await dialog.isVisible()).toBe(false);
    expect(await page.evaluate(() => sessionStorage.getItem('mlxcel.apiKey'))).toBe(API_KEY);
    expect(errors.filter((e) => !/status of 401/.test(e))).toEqual([]);
  });

  it('picks up conversations another tab changed', async () => {
    const { page, errors } = await openPage(served.url);
    const other = await context!.newPage();
    await other.goto(served.url);
    page.once('dialog', (d) => void d.accept('Renamed in tab one'));
    await page.click('#rename-chat');
    await expect.poll(() => other.textContent('#conversations [aria-current="true"]')).toBe('Renamed in tab one');
    expect(errors).toEqual([]);
  });

  it('attaches images where the model has a vision tower: thumbnails, image_url parts, kept across a reload', async () => {
    // Started here, not with the others: a fourth server running beside them made the streaming test's
    // frame-count check flaky on a loaded machine.
    const vision = await serveDemo(['--model', VISION_DIR]);
    try {
      await imageAttachChecks(vision);
    } finally {
      await vision.stop();
    }
  }, 60_000);

  async function imageAttachChecks(vision: Served): Promise<void> {
    // A text-only model: no image button.
    const plain = await openPage(served.url);
    await modelShown(plain.page);
    expect(await plain.page.locator('#attach').isHidden()).toBe(true);
    await context!.close();

    const { page, errors, requests } = await openPage(vision.url);
    await expect.poll(() => page.locator('#attach').isVisible(), { timeout: 15_000 }).toBe(true);
    const png = readFileSync(`${VISION_DIR}/image.png`);
    await page.setInputFiles('#attach-file', { name: 'cat.png', mimeType: 'image/png', buffer: png });
    await expect.poll(() => page.locator('#attachments img').count()).toBe(1);
    // Removing it and picking it again (and a file that is not an image, refused with a notice).
    await page.click('#attachments .remove');
    expect(await page.locator('#attachments').isHidden()).toBe(true);
    await page.setInputFiles('#attach-file', [{ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hi') }, { name: 'cat.png', mimeType: 'image/png', buffer: png }]);
    await expect.poll(() => page.textContent('#notice')).toMatch(/notes\.txt is not a PNG, JPEG or WebP image/);
    await expect.poll(() => page.locator('#attachments img').count()).toBe(1);
    await setSetting(page, 'max_tokens', '3');
    await setSetting(page, 'temperature', '0');
    await sendMessage(page, 'What is in the picture?');
    // (the tiny model's tokens may decode to no text, so there may be no tok/s figure to wait for)
    const statsLine = page.locator('.msg.assistant:last-child .stats');
    await expect.poll(() => statsLine.textContent(), { timeout: 30_000 }).toMatch(/generated tokens/);
    const stats = (await statsLine.textContent())!;
    // The image's 64 soft tokens are in the prompt.
    expect(Number(/^(\d+) prompt/.exec(stats)![1])).toBeGreaterThan(66);
    expect(requests).toHaveLength(1);
    const dataUrl = `data:image/png;base64,${png.toString('base64')}`;
    expect((requests[0]!.messages as unknown[])[0]).toEqual({ role: 'user', content: [{ type: 'image_url', image_url: { url: dataUrl } }, { type: 'text', text: 'What is in the picture?' }] });
    expect(await page.locator('#attachments').isHidden()).toBe(true);
    expect(await page.getAttribute('.msg.user .thumb img', 'src')).toBe(dataUrl);
    await page.reload();
    await expect.poll(() => page.locator('.msg.user .thumb img').count()).toBe(1);
    expect(await page.locator('.msg.assistant .error-text').count()).toBe(0);
    expect(errors).toEqual([]);
  }

  it('is served with headers that forbid framing and inline scripts, and not at all with --no-webui', async () => {
    const res = await fetch(served.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self'.*frame-ancestors 'none'/);
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    // In the browser: a page on another origin that frames the chat page gets an error page instead.
    context = await browser.newContext();
    const framer = await context.newPage();
    await framer.route('http://framer.test/', (route) => route.fulfill({ contentType: 'text/html', body: `<iframe src="${served.url}"></iframe>` }));
    await framer.goto('http://framer.test/');
    await expect.poll(() => framer.frames().length).toBe(2);
    await expect.poll(() => framer.frames()[1]!.url()).toBe('chrome-error://chromewebdata/');
    expect((await fetch(bare.url)).status).toBe(404);
    expect((await fetch(`${bare.url}v1/models`)).status).toBe(200);
  });
});
