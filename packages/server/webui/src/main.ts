/**
 * The chat page: wires the conversation list, the message view, the settings panel and the composer to
 * the store (localStorage) and the API client (the server's public API).
 */
import { ApiClient, ApiError, type ServerInfo } from './api.js';
import { byId, download, el } from './dom.js';
import { fillBody, messageView, answerStats, thumbnails, type MessageView } from './messages.js';
import { fillSettings, readSettings, samplingBody } from './settings.js';
import { ConversationStore } from './store.js';
import type { Conversation, Message } from './types.js';

const store = new ConversationStore();
let current: Conversation = store.get(store.currentId()) ?? store.all()[0] ?? store.create();
let server: ServerInfo | null = null;
/** The answer being streamed, if any (its conversation may no longer be the one on screen). */
let streaming: { conv: Conversation; abort: AbortController } | null = null;

const ui = {
  app: byId('app'),
  list: byId<HTMLUListElement>('conversations'),
  messages: byId('messages'),
  modelName: byId('model-name'),
  modelCtx: byId('model-ctx'),
  settings: byId('settings'),
  toggleSettings: byId<HTMLButtonElement>('toggle-settings'),
  input: byId<HTMLTextAreaElement>('input'),
  send: byId<HTMLButtonElement>('send'),
  stop: byId<HTMLButtonElement>('stop'),
  keyDialog: byId<HTMLDialogElement>('key-dialog'),
  keyInput: byId<HTMLInputElement>('key-input'),
  keyReason: byId('key-reason'),
  attach: byId<HTMLButtonElement>('attach'),
  attachFile: byId<HTMLInputElement>('attach-file'),
  attachments: byId('attachments'),
};

/** Images picked for the next message (data: URLs), shown above the composer until it is sent. */
let pendingImages: string[] = [];
/** Largest image file the page attaches (the server's request body limit is 16 MiB by default). */
const MAX_IMAGE_BYTES = 8 * 1024 * 1024;

let keyPrompt: Promise<string | null> | null = null;

/**
 * Asks for the API key in a modal; resolves null if the user dismisses it (Esc). Requests refused at
 * the same time share one prompt.
 */
function askKey(reason: string): Promise<string | null> {
  if (keyPrompt) return keyPrompt;
  ui.keyReason.textContent = reason;
  ui.keyInput.value = '';
  ui.keyDialog.returnValue = '';
  ui.keyDialog.showModal();
  keyPrompt = new Promise((resolve) => {
    ui.keyDialog.addEventListener('close', () => {
      keyPrompt = null;
      resolve(ui.keyDialog.returnValue === 'ok' && ui.keyInput.value ? ui.keyInput.value : null);
    }, { once: true });
  });
  return keyPrompt;
}

const api = new ApiClient(askKey);

// ---- conversation list ----

function renderList(): void {
  const items = store.all().map((c) => {
    const li = el('li');
    const button = el('button', 'conv', c.title);
    button.type = 'button';
    button.title = c.title;
    if (c.id === current.id) button.setAttribute('aria-current', 'true');
    button.addEventListener('click', () => open(c));
    li.append(button);
    return li;
  });
  ui.list.replaceChildren(...items);
}

function open(c: Conversation): void {
  current = c;
  store.setCurrent(c.id);
  fillSettings(c);
  renderList();
  renderMessages();
  ui.app.classList.remove('sidebar-open');
}

function touch(c: Conversation): void {
  c.updated = Date.now();
  store.save();
  showNotice(store.saveError);
}

// ---- messages ----

let streamingView: MessageView | null = null;

function renderMessages(): void {
  streamingView = null;
  const views = current.messages.map((m, i) => {
    const pending = streaming?.conv === current && i === current.messages.length - 1;
    const view = messageView(m, pending);
    if (pending) streamingView = view;
    if (!pending && m.role === 'assistant' && i === current.messages.length - 1 && !streaming) {
      const regen = el('button', 'regenerate', 'Regenerate');
      regen.type = 'button';
      regen.addEventListener('click', () => regenerate());
      view.root.append(regen);
    }
    return view.root;
  });
  if (views.length === 0) views.push(el('p', 'empty', 'Start the conversation below. Settings (system prompt, temperature, …) are per conversation.'));
  ui.messages.replaceChildren(...views);
  ui.messages.scrollTop = ui.messages.scrollHeight;
  updateComposer();
}

let frameQueued = false;
/** Streams re-render the growing answer at most once per animation frame. */
function queueStreamRender(m: Message): void {
  if (frameQueued) return;
  frameQueued = true;
  requestAnimationFrame(() => {
    frameQueued = false;
    if (!streamingView) return;
    const atBottom = ui.messages.scrollHeight - ui.messages.scrollTop - ui.messages.clientHeight < 40;
    fillBody(streamingView.body, m);
    streamingView.stats.textContent = answerStats(m);
    if (atBottom) ui.messages.scrollTop = ui.messages.scrollHeight;
  });
}

function updateComposer(): void {
  const busy = streaming !== null;
  ui.send.hidden = busy;
  ui.stop.hidden = !busy;
  // Screen readers announce the answer once it is complete, not at every streamed frame.
  ui.messages.setAttribute('aria-busy', String(busy));
}

/** The message box grows with its text up to the CSS max-height. */
function fitInput(): void {
  ui.input.style.height = 'auto';
  ui.input.style.height = `${ui.input.scrollHeight + 2}px`;
}

function showNotice(text: string | null): void {
  let notice = document.getElementById('notice');
  if (!text) return notice?.remove();
  if (!notice) {
    notice = el('div');
    notice.id = 'notice';
    notice.setAttribute('role', 'alert');
    byId('composer').before(notice);
  }
  notice.textContent = text;
}

// ---- generation ----

type ContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

/**
 * The messages sent for conv: its system prompt, then every turn except failed or empty answers;
 * a turn with images is sent as its image_url parts then its text.
 */
function requestMessages(conv: Conversation): { role: string; content: string | ContentPart[] }[] {
  const msgs = conv.messages.filter((m) => !m.error && (m.role === 'user' || m.content)).map((m) => ({
    role: m.role,
    content: m.images?.length
      ? [...m.images.map((url): ContentPart => ({ type: 'image_url', image_url: { url } })), { type: 'text' as const, text: m.content }]
      : m.content,
  }));
  return conv.systemPrompt.trim() ? [{ role: 'system', content: conv.systemPrompt }, ...msgs] : msgs;
}

function renderAttachments(): void {
  ui.attachments.hidden = pendingImages.length === 0;
  ui.attachments.replaceChildren(...(pendingImages.length ? [thumbnails(pendingImages, (i) => {
    pendingImages.splice(i, 1);
    renderAttachments();
  })] : []));
}

/** Reads the picked files into data: URLs (too large or not an image: a notice instead). */
async function attachFiles(files: FileList | null): Promise<void> {
  for (const f of Array.from(files ?? [])) {
    if (!/^image\/(png|jpeg|webp)$/.test(f.type)) {
      showNotice(`${f.name} is not a PNG, JPEG or WebP image.`);
      continue;
    }
    if (f.size > MAX_IMAGE_BYTES) {
      showNotice(`${f.name} is ${(f.size / 1048576).toFixed(1)} MiB; images up to ${MAX_IMAGE_BYTES / 1048576} MiB can be attached.`);
      continue;
    }
    const url = await new Promise<string>((resolve, reject) => {
      const r = new FileReader();
      r.onload = () => resolve(String(r.result));
      r.onerror = () => reject(r.error);
      r.readAsDataURL(f);
    });
    pendingImages.push(url);
  }
  ui.attachFile.value = '';
  renderAttachments();
}

async function generate(conv: Conversation): Promise<void> {
  const history = requestMessages(conv);
  const answer: Message = { role: 'assistant', content: '' };
  conv.messages.push(answer);
  const abort = new AbortController();
  streaming = { conv, abort };
  touch(conv);
  if (conv === current) renderMessages();
  let first = 0;
  let last = 0;
  let saved = performance.now();
  try {
    const body: Record<string, unknown> = { messages: history, ...samplingBody(conv.settings) };
    if (server?.modelId) body.model = server.modelId;
    const { finishReason } = await api.streamChat(body, abort.signal, {
      onDelta(text) {
        last = performance.now();
        if (!first) first = last;
        answer.content += text;
        if (conv === current) queueStreamRender(answer);
        // Keep what has arrived if the tab is closed mid-answer (a save per second, not per token).
        if (last - saved > 1000) {
          saved = last;
          store.save();
        }
      },
      onUsage(usage) {
        answer.usage = { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens };
      },
    });
    answer.finishReason = finishReason ?? 'stop';
  } catch (e) {
    if (abort.signal.aborted) answer.stopped = true;
    else if (e instanceof ApiError) answer.error = e.message;
    else answer.error = `Could not reach the server (${(e as Error).message}).`;
  }
  // Decode speed: the tokens after the first over the time they took to arrive (prefill excluded).
  const n = answer.usage?.completion_tokens ?? 0;
  if (n > 1 && last > first) answer.tokensPerSecond = (n - 1) / ((last - first) / 1000);
  streaming = null;
  touch(conv);
  if (conv === current) renderMessages();
  else updateComposer();
}

function send(): void {
  const text = ui.input.value;
  if ((!text.trim() && !pendingImages.length) || streaming) return;
  ui.input.value = '';
  fitInput();
  if (current.messages.length === 0 && current.title === 'New chat') {
    current.title = (text.trim() || 'Image').replace(/\s+/g, ' ').slice(0, 48);
    renderList();
  }
  const turn: Message = { role: 'user', content: text };
  if (pendingImages.length) turn.images = pendingImages;
  pendingImages = [];
  renderAttachments();
  current.messages.push(turn);
  void generate(current);
}

/** Drops the last answer (or failed attempt) and asks again with the same history. */
function regenerate(): void {
  if (streaming) return;
  const last = current.messages.at(-1);
  if (last?.role === 'assistant') current.messages.pop();
  if (current.messages.length) void generate(current);
}

function stop(): void {
  streaming?.abort.abort();
}

// ---- server info ----

async function loadServerInfo(): Promise<void> {
  try {
    server = await api.serverInfo();
    if (server.unavailable) {
      ui.modelName.textContent = `unavailable: ${server.unavailable}`;
      return;
    }
    if (server.loading) {
      ui.modelName.textContent = 'model loading…';
      setTimeout(() => void loadServerInfo(), 2000);
      return;
    }
    ui.modelName.textContent = server.model ?? 'model';
    if (server.model) document.title = `${server.model.split('/').pop()} · mlxcel chat`;
    ui.modelName.title = server.model ?? '';
    ui.modelCtx.textContent = server.contextLength ? `· ${server.contextLength.toLocaleString('en')}-token context` : '';
    // Images can be attached only where the model has a vision tower.
    ui.attach.hidden = !server.imageInput;
  } catch (e) {
    ui.modelName.textContent = e instanceof ApiError ? e.message : `server unreachable (${(e as Error).message})`;
  }
}

// ---- conversation actions ----

function exportJson(conversations: readonly Conversation[], name: string): void {
  const doc = { format: 'mlxcel-chat', version: 1, exported: new Date().toISOString(), conversations };
  download(`${name.replace(/[^\w.-]+/g, '_').slice(0, 60) || 'chat'}.json`, JSON.stringify(doc, null, 2));
}

byId('new-chat').addEventListener('click', () => open(store.create(current)));
byId('rename-chat').addEventListener('click', () => {
  const title = prompt('Rename conversation', current.title);
  if (title === null || !title.trim()) return;
  current.title = title.trim();
  touch(current);
  renderList();
});
byId('delete-chat').addEventListener('click', () => {
  if (!confirm(`Delete "${current.title}"? This cannot be undone.`)) return;
  if (streaming?.conv === current) stop();
  store.remove(current.id);
  open(store.all()[0] ?? store.create());
});
byId('export-chat').addEventListener('click', () => exportJson([current], current.title));
byId('export-all').addEventListener('click', () => exportJson(store.all(), 'mlxcel-conversations'));
byId('open-sidebar').addEventListener('click', () => ui.app.classList.add('sidebar-open'));
byId('close-sidebar').addEventListener('click', () => ui.app.classList.remove('sidebar-open'));
ui.toggleSettings.addEventListener('click', () => {
  ui.settings.hidden = !ui.settings.hidden;
  ui.toggleSettings.setAttribute('aria-expanded', String(!ui.settings.hidden));
});
ui.settings.addEventListener('input', () => {
  readSettings(current);
  touch(current);
});

// ---- composer and keyboard ----

byId<HTMLFormElement>('composer').addEventListener('submit', (e) => {
  e.preventDefault();
  send();
});
ui.stop.addEventListener('click', stop);
ui.attach.addEventListener('click', () => ui.attachFile.click());
ui.attachFile.addEventListener('change', () => void attachFiles(ui.attachFile.files));
ui.input.addEventListener('input', fitInput);
ui.input.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send();
  }
});
document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && streaming && !ui.keyDialog.open) {
    e.preventDefault();
    stop();
  }
});

// Another tab saved its conversations: take them, unless this tab is mid-answer (it saves last then).
window.addEventListener('storage', (e) => {
  if (e.key !== store.storageKey || streaming) return;
  store.reload();
  open(store.get(current.id) ?? store.all()[0] ?? store.create());
});

fillSettings(current);
renderList();
renderMessages();
showNotice(store.saveError);
void loadServerInfo();
ui.input.focus();
