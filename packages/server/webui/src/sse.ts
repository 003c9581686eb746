/**
 * Incremental parser for a text/event-stream body: feed it decoded text as it arrives (chunks may split
 * lines or events anywhere) and it returns the `data:` payload of each event completed so far.
 */
export class SseParser {
  private buffer = '';
  private data: string[] = [];

  push(text: string): string[] {
    this.buffer += text;
    const events: string[] = [];
    let nl: number;
    while ((nl = this.buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = this.buffer.slice(0, nl);
      const sep = this.buffer.startsWith('\r\n', nl) ? 2 : 1;
      // A lone trailing \r may be the first half of \r\n: wait for the next chunk.
      if (sep === 1 && this.buffer[nl] === '\r' && nl === this.buffer.length - 1) break;
      this.buffer = this.buffer.slice(nl + sep);
      if (line === '') {
        if (this.data.length) events.push(this.data.join('\n'));
        this.data = [];
      } else if (line.startsWith('data:')) {
        this.data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
      }
      // Comments (":...") and other fields (event:, id:, retry:) carry nothing the page uses.
    }
    return events;
  }

  /** The body ended: an event without its closing blank line still counts. */
  end(): string[] {
    const rest = this.push('\n\n');
    this.buffer = '';
    return rest;
  }
}
