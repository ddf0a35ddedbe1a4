/**
 * The context's sequences, lent one per request. A request gets the free sequence whose
 * evaluated tokens share the longest prefix with its prompt, so the turns of one episode
 * (each prompt extending the last) reuse the KV cache instead of evaluating it again.
 */
import { Semaphore } from '@dreamgym/core/internal';
import type { LlamaContextSequence, Token } from 'node-llama-cpp';

/** A sequence lent to one request. */
export interface SequenceLease {
  sequence: LlamaContextSequence;
  /** Tokens of the prompt already evaluated in the sequence (before alignment). */
  shared: number;
  /** Gives the sequence back; call exactly once. */
  release(): void;
}

export class SequencePool {
  private readonly free: LlamaContextSequence[];
  private readonly lastUse = new Map<LlamaContextSequence, number>();
  private readonly semaphore: Semaphore;
  private tick = 0;

  constructor(sequences: LlamaContextSequence[]) {
    this.free = [...sequences];
    this.semaphore = new Semaphore(sequences.length);
  }

  /** Requests holding a sequence now. */
  get busy(): number {
    return this.semaphore.inUse;
  }

  /** Requests waiting for a sequence. */
  get queued(): number {
    return this.semaphore.queued;
  }

  /** Waits for a free sequence (rejects with the signal's reason on abort) and lends the best one for `tokens`. */
  async acquire(tokens: readonly Token[], signal?: AbortSignal): Promise<SequenceLease> {
    const release = await this.semaphore.acquire(signal);
    let best = 0;
    let bestShared = -1;
    for (const [index, sequence] of this.free.entries()) {
      const shared = sequence.compareContextTokens(tokens as Token[]).firstDifferentIndex;
      const older = (this.lastUse.get(sequence) ?? 0) < (this.lastUse.get(this.free[best]!) ?? 0);
      if (shared > bestShared || (shared === bestShared && older)) {
        best = index;
        bestShared = shared;
      }
    }
    const [sequence] = this.free.splice(best, 1);
    let released = false;
    return {
      sequence: sequence!,
      shared: Math.max(0, bestShared),
      release: () => {
        if (released) return;
        released = true;
        this.tick += 1;
        this.lastUse.set(sequence!, this.tick);
        this.free.push(sequence!);
        release();
      },
    };
  }

  /** Waits until no request holds a sequence, then keeps every slot (for disposal). */
  async drain(): Promise<void> {
    const slots = this.semaphore.limit;
    await Promise.all(Array.from({ length: slots }, () => this.semaphore.acquire()));
  }
}

/**
 * Erases what of `sequence` differs from `tokens` and returns the index from which `tokens`
 * must be evaluated. `evaluateFrom` caps the reuse: logits exist only for tokens evaluated
 * now, so the position whose next-token distribution is needed is always evaluated again.
 */
export async function alignSequence(
  sequence: LlamaContextSequence,
  tokens: readonly Token[],
  evaluateFrom: number,
): Promise<number> {
  const shared = sequence.compareContextTokens(tokens as Token[]).firstDifferentIndex;
  const start = Math.max(0, Math.min(shared, evaluateFrom));
  if (start < sequence.nextTokenIndex) {
    await sequence.eraseContextTokenRanges([{ start, end: sequence.nextTokenIndex }]);
  }
  return start;
}
