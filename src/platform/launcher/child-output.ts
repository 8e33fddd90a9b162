// What a deployment's runtime child prints (its own logs, the graph code's console output) is kept in
// its revision's log: the build log while the build loads the graphs, the deploy log once it serves.
// Bounded per revision (a chatty graph must not fill the database), batched into one log line per
// burst, and with every secret of the child's environment masked: a graph that prints its API key
// does not publish it through `…/logs`.

/** Most characters of output kept per revision; the rest is dropped with a note. */
const OUTPUT_LOG_LIMIT = 256 * 1024;
const FLUSH_AFTER_MS = 250;
const FLUSH_AT_CHARS = 4096;
/** Shorter values are not masked: masking "1" would mask every digit 1 of the output. */
const MIN_MASKED_LENGTH = 4;

export type OutputLogType = 'build' | 'deploy';

/** Replaces every occurrence of the hidden values (and of each line of a multi-line one) with [redacted]. */
function maskSecrets(text: string, hidden: readonly string[]): string {
  const needles = hidden
    .flatMap((value) => [value, ...value.split('\n')])
    .map((value) => value.trim())
    .filter((value) => value.length >= MIN_MASKED_LENGTH)
    // Longest first, so a value containing another is masked whole.
    .sort((a, b) => b.length - a.length);
  let masked = text;
  for (const needle of needles) masked = masked.split(needle).join('[redacted]');
  return masked;
}

export class ChildOutputLog {
  type: OutputLogType = 'build';
  private pending = '';
  private kept = 0;
  private full = false;
  private timer: NodeJS.Timeout | undefined;
  private writes: Promise<void> = Promise.resolve();
  private readonly hidden = new Set<string>();

  constructor(
    private readonly write: (type: OutputLogType, message: string) => Promise<void>,
    private readonly limit = OUTPUT_LOG_LIMIT,
  ) {}

  /** Values never written (a child's secrets, database password, signing key). */
  hide(values: readonly string[]): void {
    for (const value of values) this.hidden.add(value);
  }

  /** `text` with the hidden values masked, for messages that quote the output elsewhere. */
  mask(text: string): string {
    return maskSecrets(text, [...this.hidden]);
  }

  append(chunk: string): void {
    if (this.full) return;
    this.pending += chunk;
    if (this.pending.length >= FLUSH_AT_CHARS) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), FLUSH_AFTER_MS).unref();
  }

  /** Writes what is pending (whole lines; a partial line waits unless it is long), in order. */
  flush(options: { all?: boolean } = {}): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const end = options.all || this.pending.length >= FLUSH_AT_CHARS ? this.pending.length : this.pending.lastIndexOf('\n') + 1;
    if (end > 0 && !this.full) {
      let text = this.mask(this.pending.slice(0, end)).replace(/\n$/, '');
      this.pending = this.pending.slice(end);
      if (this.kept + text.length > this.limit) {
        text = `${text.slice(0, Math.max(0, this.limit - this.kept))}\n… the runtime's further output is not kept (${this.limit} characters per revision)`;
        this.full = true;
        this.pending = '';
      }
      this.kept += text.length;
      const type = this.type;
      if (text) this.writes = this.writes.then(() => this.write(type, text));
    }
    if (this.pending && !this.timer) this.timer = setTimeout(() => this.flush({ all: true }), FLUSH_AFTER_MS).unref();
    return this.writes;
  }

  /** What is pending, written now (the child exited or moves from build to deploy). */
  drain(): Promise<void> {
    return this.flush({ all: true });
  }
}
