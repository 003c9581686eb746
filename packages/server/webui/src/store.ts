/** Conversations kept in the browser's localStorage (one JSON array), plus which one is open. */
import { DEFAULT_SAMPLING, type Conversation, type Sampling } from './types.js';

const LIST_KEY = 'mlxcel.conversations.v1';
const CURRENT_KEY = 'mlxcel.current';

/** A data: URL of a PNG / JPEG / WebP / GIF image, the only kind of attachment the page keeps. */
export function isImageDataUrl(v: unknown): v is string {
  return typeof v === 'string' && /^data:image\/(png|jpeg|webp|gif);base64,[A-Za-z0-9+/=]+$/.test(v);
}

function newId(): string {
  return `c${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
}

function validSampling(s: unknown): Sampling {
  const out: Sampling = { ...DEFAULT_SAMPLING };
  if (s && typeof s === 'object')
    for (const k of Object.keys(out) as (keyof Sampling)[]) {
      const v = (s as Record<string, unknown>)[k];
      if (v === null || (typeof v === 'number' && Number.isFinite(v))) out[k] = v;
    }
  return out;
}

/** Drops entries that are not conversations (storage edited by hand or by an older page). */
function parse(text: string | null): Conversation[] {
  if (!text) return [];
  try {
    const list = JSON.parse(text) as unknown;
    if (!Array.isArray(list)) return [];
    return list
      .filter((c): c is Conversation => !!c && typeof c === 'object' && typeof c.id === 'string' && Array.isArray(c.messages))
      .map((c) => ({
        ...c,
        title: typeof c.title === 'string' ? c.title : 'Untitled',
        systemPrompt: typeof c.systemPrompt === 'string' ? c.systemPrompt : '',
        settings: validSampling(c.settings),
        messages: c.messages
          .filter((m) => m && (m.role === 'user' || m.role === 'assistant') && typeof m.content === 'string')
          // Attached images are data: URLs of images and nothing else (they become <img> elements).
          .map((m) => (m.images === undefined ? m : { ...m, images: Array.isArray(m.images) ? m.images.filter(isImageDataUrl) : [] }))
          // An answer with no ending of any kind was still streaming when the page went away.
          .map((m) => (m.role === 'assistant' && !m.finishReason && !m.error && !m.stopped ? { ...m, stopped: true } : m)),
      }));
  } catch {
    return [];
  }
}

export class ConversationStore {
  readonly storageKey = LIST_KEY;
  private list: Conversation[] = parse(localStorage.getItem(LIST_KEY));
  /** Set when the last save failed (storage full or disabled), so the page can say so. */
  saveError: string | null = null;

  /** Re-reads the conversations (another tab changed them). */
  reload(): void {
    this.list = parse(localStorage.getItem(LIST_KEY));
  }

  /** Newest first. */
  all(): readonly Conversation[] {
    return [...this.list].sort((a, b) => b.updated - a.updated);
  }

  get(id: string | null): Conversation | undefined {
    return this.list.find((c) => c.id === id);
  }

  currentId(): string | null {
    return localStorage.getItem(CURRENT_KEY);
  }

  setCurrent(id: string): void {
    localStorage.setItem(CURRENT_KEY, id);
  }

  /** A new empty conversation that inherits the system prompt and settings of `from` (if given). */
  create(from?: Conversation): Conversation {
    const now = Date.now();
    const c: Conversation = {
      id: newId(),
      title: 'New chat',
      created: now,
      updated: now,
      systemPrompt: from?.systemPrompt ?? '',
      settings: { ...(from?.settings ?? DEFAULT_SAMPLING) },
      messages: [],
    };
    this.list.push(c);
    this.save();
    return c;
  }

  remove(id: string): void {
    this.list = this.list.filter((c) => c.id !== id);
    this.save();
  }

  /** Persists every conversation; call after changing one (its `updated` is the caller's to bump). */
  save(): void {
    try {
      localStorage.setItem(LIST_KEY, JSON.stringify(this.list));
      this.saveError = null;
    } catch (e) {
      this.saveError = `Could not save conversations in this browser's storage (${(e as Error).name}). Export them to keep them.`;
    }
  }
}
