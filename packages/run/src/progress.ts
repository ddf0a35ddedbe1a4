/**
 * Progress for long runs: a redrawn bar with ETA and live success rate on a terminal,
 * plain timestamped log lines otherwise (CI logs, files, pipes).
 */

export interface ProgressState {
  done: number;
  total: number;
  elapsedMs: number;
  /** Latest success rate, shown live. */
  successRate?: number;
  /** Short extra fields, e.g. `{ pool: 42, buffer: 3100 }`. */
  fields?: Record<string, string | number>;
}

function formatDuration(milliseconds: number): string {
  const seconds = Math.max(0, Math.round(milliseconds / 1000));
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const rest = seconds % 60;
  const two = (value: number) => String(value).padStart(2, '0');
  return hours > 0 ? `${hours}:${two(minutes)}:${two(rest)}` : `${two(minutes)}:${two(rest)}`;
}

/** Estimated time left, from the mean time per unit so far. */
export function estimateRemainingMs(state: ProgressState): number | undefined {
  if (state.done <= 0 || state.done > state.total) return undefined;
  return (state.elapsedMs / state.done) * (state.total - state.done);
}

function describe(state: ProgressState): string {
  const eta = estimateRemainingMs(state);
  const parts = [
    `${state.done}/${state.total}`,
    `elapsed ${formatDuration(state.elapsedMs)}`,
    `ETA ${eta === undefined ? '--:--' : formatDuration(eta)}`,
  ];
  if (state.successRate !== undefined)
    parts.push(`success ${(state.successRate * 100).toFixed(1)}%`);
  for (const [key, value] of Object.entries(state.fields ?? {})) parts.push(`${key} ${value}`);
  return parts.join('  ');
}

/** One line with a bar: `[#######.........] 3/10  elapsed 00:12  ETA 00:28  success 40.0%`. */
export function formatProgressBar(state: ProgressState, width = 24): string {
  const fraction = state.total > 0 ? Math.min(1, state.done / state.total) : 0;
  const filled = Math.round(fraction * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${describe(state)}`;
}

/** A plain log line for non-terminals. */
export function formatProgressLine(label: string, state: ProgressState): string {
  return `${new Date().toISOString()} ${label} ${describe(state)}`;
}

/** Where progress goes: a TTY stream gets a redrawn bar, anything else log lines. */
export interface ProgressOutput {
  isTTY?: boolean;
  write(text: string): unknown;
}

export class ProgressReporter {
  private readonly startedAt = Date.now();
  private lastLength = 0;

  constructor(
    private readonly label: string,
    /** Units of work in all; may be raised while running (e.g. when a phase is planned). */
    public total: number,
    private readonly output: ProgressOutput = process.stderr,
  ) {}

  /** Reports `done` units out of the total. */
  update(done: number, extras: Pick<ProgressState, 'successRate' | 'fields'> = {}): void {
    const state: ProgressState = {
      done,
      total: this.total,
      elapsedMs: Date.now() - this.startedAt,
      ...extras,
    };
    if (this.output.isTTY) {
      const line = `${this.label} ${formatProgressBar(state)}`;
      this.output.write(`\r${line}${' '.repeat(Math.max(0, this.lastLength - line.length))}`);
      this.lastLength = line.length;
    } else {
      this.output.write(`${formatProgressLine(this.label, state)}\n`);
    }
  }

  /** Prints a message without breaking the bar. */
  log(message: string): void {
    if (this.output.isTTY && this.lastLength > 0) this.output.write('\n');
    this.lastLength = 0;
    this.output.write(`${message}\n`);
  }

  /** Ends the bar's line. */
  finish(): void {
    if (this.output.isTTY && this.lastLength > 0) this.output.write('\n');
    this.lastLength = 0;
  }
}

/**
 * An `onEpisode` callback for `evaluatePolicy` that reports its episodes under `label`: each
 * episode on a terminal, a line per tenth of them otherwise, with the success rate so far.
 */
export function reportEpisodes(
  label: string,
  output: ProgressOutput = process.stderr,
): (rollout: { success: boolean }, progress: { done: number; total: number }) => void {
  const reporter = new ProgressReporter(label, 0, output);
  let solved = 0;
  return (rollout, { done, total }) => {
    if (rollout.success) solved += 1;
    reporter.total = total;
    const step = Math.max(1, Math.ceil(total / 10));
    if (output.isTTY || done % step === 0 || done === total) {
      reporter.update(done, { successRate: solved / done });
    }
    if (done === total) reporter.finish();
  };
}
