/**
 * Runs async work one piece at a time, in order: the messages of one session, the steps of
 * one HTTP episode. Counts what is queued or running so shutdown can wait for it.
 */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();
  private count = 0;

  /** Work queued or running. */
  get pending(): number {
    return this.count;
  }

  /** Runs `work` after everything queued before it; a failure does not stop later work. */
  run<T>(work: () => Promise<T>): Promise<T> {
    this.count += 1;
    const result = this.tail.then(work, work);
    this.tail = result.then(
      () => {
        this.count -= 1;
      },
      () => {
        this.count -= 1;
      },
    );
    return result;
  }

  /** Resolves once everything queued so far has run. */
  idle(): Promise<void> {
    return this.tail.then(() => undefined);
  }
}
