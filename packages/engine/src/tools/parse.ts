/**
 * Incremental tool-call parsing: text streams in (in pieces cut anywhere, even inside a marker);
 * text outside call blocks comes out as content, each complete call block as OpenAI-style
 * `tool_calls` deltas. A call block is `start … end`; its body is decoded by the format
 * (one call, or a JSON list of calls for Phi-4-mini).
 */
import { randomBytes } from 'node:crypto';
import type { ToolCall, ToolCallDelta } from './types.js';

export interface ParsedCall {
  name: string;
  /** Arguments as a JSON text. */
  arguments: string;
}

export interface CallSyntax {
  start: string;
  end: string;
  /** Decodes a block body into calls; throws on malformed text. */
  body(text: string): ParsedCall[];
}

export interface ParserOutput {
  content: string;
  toolCalls: ToolCallDelta[];
}

export function newCallId(): string {
  return `call_${randomBytes(12).toString('base64url')}`;
}

export class ToolCallStreamParser {
  private buf = '';
  private inCall = false;
  private readonly calls: ToolCall[] = [];
  /** Blocks that did not decode (kept as content so nothing is lost). */
  readonly malformed: string[] = [];

  constructor(private readonly syntax: CallSyntax, private readonly makeId: () => string = newCallId) {}

  /** All calls parsed so far. */
  get toolCalls(): readonly ToolCall[] {
    return this.calls;
  }

  push(text: string): ParserOutput {
    this.buf += text;
    const out: ParserOutput = { content: '', toolCalls: [] };
    for (;;) {
      if (!this.inCall) {
        const at = this.buf.indexOf(this.syntax.start);
        if (at < 0) {
          // Keep back a tail that could be the start of a marker.
          const keep = partialSuffix(this.buf, this.syntax.start);
          out.content += this.buf.slice(0, this.buf.length - keep);
          this.buf = this.buf.slice(this.buf.length - keep);
          return out;
        }
        out.content += this.buf.slice(0, at);
        this.buf = this.buf.slice(at + this.syntax.start.length);
        this.inCall = true;
      }
      const end = this.buf.indexOf(this.syntax.end);
      if (end < 0) return out;
      this.emit(this.buf.slice(0, end), out);
      this.buf = this.buf.slice(end + this.syntax.end.length);
      this.inCall = false;
    }
  }

  /** End of stream: an unterminated block is decoded if it can be (models often stop before the end marker). */
  flush(): ParserOutput {
    const out: ParserOutput = { content: '', toolCalls: [] };
    if (this.inCall) {
      this.emit(this.buf, out);
      this.inCall = false;
    } else out.content = this.buf;
    this.buf = '';
    return out;
  }

  private emit(body: string, out: ParserOutput): void {
    let parsed: ParsedCall[];
    try {
      parsed = this.syntax.body(body.trim());
    } catch {
      this.malformed.push(body);
      out.content += this.syntax.start + body;
      return;
    }
    for (const p of parsed) {
      const call: ToolCall = { id: this.makeId(), type: 'function', function: { name: p.name, arguments: p.arguments } };
      out.toolCalls.push({ index: this.calls.length, id: call.id, type: 'function', function: { name: p.name, arguments: p.arguments } });
      this.calls.push(call);
    }
  }
}

/** Length of the longest suffix of `s` that is a proper prefix of `marker`. */
function partialSuffix(s: string, marker: string): number {
  for (let n = Math.min(s.length, marker.length - 1); n > 0; n--) if (marker.startsWith(s.slice(s.length - n))) return n;
  return 0;
}

/** Parses a whole text at once: { content, toolCalls }. */
export function parseToolCalls(syntax: CallSyntax, text: string): { content: string; toolCalls: ToolCall[] } {
  const p = new ToolCallStreamParser(syntax);
  const a = p.push(text);
  const b = p.flush();
  return { content: a.content + b.content, toolCalls: [...p.toolCalls] };
}
