/**
 * The tokenizer thread: chat templates and encoding. Kept apart from the engine thread so that
 * encoding a long prompt (tens of milliseconds to seconds) never stalls the decode of other streams,
 * and apart from the HTTP thread so it never stalls /health or SSE writes.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { buildPrompt, constraintKey, grammarOf, loadChatTemplate, loadTokenizer, planChatRequest, type ChatTemplate, type Tokenizer } from '@mlxcel/engine';
import type { FromTokenizer, ToTokenizer, TokenizerWorkerInit } from './protocol.js';

const port = parentPort!;
const init = workerData as TokenizerWorkerInit;
const post = (m: FromTokenizer, transfer: ArrayBuffer[] = []) => port.postMessage(m, transfer);

function errorFields(e: unknown): { code: string; message: string; param?: string } {
  const code = (e as { code?: unknown }).code;
  const param = (e as { param?: unknown }).param;
  return { code: typeof code === 'string' ? code : 'INTERNAL', message: (e as Error)?.message ?? String(e), ...(typeof param === 'string' ? { param } : {}) };
}

const noTokenizer = () => Object.assign(new Error(`${init.dir} has no tokenizer; send token ids instead of text`), { code: 'TOKENIZER_MISSING' });

/** Longest decoded text of any single token (the cheap context bound's factor). */
function maxTokenChars(tok: Tokenizer): number {
  let most = 1;
  for (let id = 0; id < tok.vocabSize; id++) {
    const vocab = tok.idToToken(id)?.length ?? 0;
    const text = tok.decode([id]).length;
    most = Math.max(most, vocab, text);
  }
  return most;
}

/** Roles the template renders: a probe message of each role must come out in the text. */
function probeRoles(tok: Tokenizer, template: ChatTemplate): string[] {
  const probe = 'mlxcel-role-probe';
  const roles: string[] = [];
  for (const role of ['system', 'user', 'assistant', 'tool']) {
    // Templates that insist on alternation (Gemma) need a user turn around the probed one.
    const variants = [[{ role, content: probe }], [{ role: 'user', content: 'x' }, { role, content: probe }]];
    for (const messages of variants) {
      try {
        if (buildPrompt(tok, messages, { template }).text.includes(probe)) {
          roles.push(role);
          break;
        }
      } catch {
        // this arrangement is refused by the template; try the next one
      }
    }
  }
  return roles;
}

let tokenizer: Tokenizer | null = null;
let template: ChatTemplate | null = null;
try {
  try {
    tokenizer = loadTokenizer(init.dir);
  } catch (e) {
    if ((e as { code?: string }).code !== 'TOKENIZER_FILES_MISSING') throw e;
  }
  if (tokenizer) template = loadChatTemplate({ dir: init.dir, tokenizerConfig: tokenizer.tokenizerConfig, file: init.chatTemplateFile });
  post({
    type: 'ready',
    info: {
      hasTokenizer: tokenizer !== null,
      hasChatTemplate: template !== null,
      maxTokenChars: tokenizer ? maxTokenChars(tokenizer) : 1,
      roles: tokenizer && template ? probeRoles(tokenizer, template) : [],
    },
  });
} catch (e) {
  post({ type: 'fatal', ...errorFields(e) });
  process.exit(1);
}

port.on('message', (m: ToTokenizer) => {
  try {
    if (m.type === 'decode') {
      post({ type: 'decoded', id: m.id, text: tokenizer ? tokenizer.decode(m.ids) : '' });
      return;
    }
    if (m.type === 'plan') {
      // Tools, response_format, grammar: the schema / grammar is compiled to a grammar here, off the
      // HTTP thread and off the engine thread (the engine only wraps it around its vocabulary).
      if (!tokenizer) throw noTokenizer();
      const plan = planChatRequest({ tokenizer, chatTemplate: template }, m.request);
      const ids = plan.promptIds;
      post({
        type: 'planned', id: m.id, ids,
        structure: { grammar: plan.grammar, suppressedIds: plan.suppressedIds, toolFormat: plan.toolFormat, parsesCalls: plan.parsesCalls },
      }, [ids.buffer as ArrayBuffer]);
      return;
    }
    if (m.type === 'grammar') {
      if (!tokenizer) throw noTokenizer();
      const spec = { responseFormat: m.responseFormat, grammar: m.grammar };
      let grammar;
      try {
        grammar = grammarOf(spec, tokenizer);
      } catch (e) {
        throw Object.assign(e as Error, { param: m.grammar !== undefined ? 'grammar' : 'response_format' });
      }
      post({ type: 'grammar', id: m.id, grammar: grammar ? { grammar, key: constraintKey(spec) ?? undefined } : null });
      return;
    }
    const p = m.prompt;
    if (p.kind === 'ids') {
      const ids = Int32Array.from(p.ids);
      post({ type: 'tokenized', id: m.id, ids }, [ids.buffer]);
      return;
    }
    if (!tokenizer) throw noTokenizer();
    const input = p.kind === 'chat' ? p.messages : p.text;
    const ids = Int32Array.from(buildPrompt(tokenizer, input, { template, noChatTemplate: m.raw }).ids);
    post({ type: 'tokenized', id: m.id, ids }, [ids.buffer]);
  } catch (e) {
    post({ type: 'error', id: m.id, ...errorFields(e) });
  }
});
