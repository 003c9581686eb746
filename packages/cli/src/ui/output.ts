/**
 * Terminal output: colour and progress bars only on a TTY (and never with NO_COLOR); plain lines
 * in CI and pipes. Diagnostics go to stderr so stdout carries only the generated text or JSON.
 */
const tty = Boolean(process.stderr.isTTY);
const color = tty && !process.env.NO_COLOR;

const wrap = (code: number) => (s: string) => (color ? `\u001b[${code}m${s}\u001b[0m` : s);
export const dim = wrap(2);
export const bold = wrap(1);
export const red = wrap(31);
export const yellow = wrap(33);
export const green = wrap(32);

export function info(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** A progress reporter: a redrawn bar on a TTY, a line per 10% step otherwise. */
export class Progress {
  private lastPct = -1;
  constructor(private readonly label: string) {}
  update(done: number, total: number, suffix = ''): void {
    const pct = total > 0 ? Math.floor((done / total) * 100) : 100;
    if (tty) {
      const width = 30, fill = Math.round((pct / 100) * width);
      process.stderr.write(`\r${this.label} [${'#'.repeat(fill)}${'.'.repeat(width - fill)}] ${pct}% ${suffix}`.padEnd(80));
      if (done >= total) process.stderr.write('\n');
    } else if (pct >= this.lastPct + 10 || (done >= total && this.lastPct < 100)) {
      this.lastPct = pct - (pct % 10);
      if (done >= total) this.lastPct = 100;
      process.stderr.write(`${this.label}: ${pct}% ${suffix}\n`);
    }
  }
}

export function formatBytes(n: number): string {
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${u[i]}`;
}
