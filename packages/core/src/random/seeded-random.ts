/**
 * A seeded pseudo-random generator (xoshiro128**), passed explicitly to everything that
 * needs randomness so runs are reproducible and checkpoints can capture the exact state.
 */
import { InvalidArgumentError } from '../errors.js';

/** The serialisable state of a {@link SeededRandom}: four unsigned 32-bit words. */
export type RandomState = [number, number, number, number];

/** splitmix32: spreads a 32-bit seed into well-mixed words for the generator state. */
function splitmix32(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (x + 0x9e3779b9) >>> 0;
    let z = x;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/** FNV-1a hash of a string, for deriving named sub-streams. */
function hashString(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

export class SeededRandom {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  /** Creates a generator from an integer seed (any 32-bit value; the same seed gives the same stream). */
  constructor(seed: number) {
    if (!Number.isFinite(seed)) {
      throw new InvalidArgumentError(`Seed must be a finite number, got ${seed}.`, {
        argument: 'seed',
      });
    }
    const next = splitmix32(Math.trunc(seed));
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** Restores a generator from {@link SeededRandom.getState}. */
  static fromState(state: RandomState): SeededRandom {
    const random = new SeededRandom(0);
    random.setState(state);
    return random;
  }

  /** The full state, for checkpoints. */
  getState(): RandomState {
    return [this.s0, this.s1, this.s2, this.s3];
  }

  setState(state: RandomState): void {
    if (state.length !== 4 || state.some((word) => !Number.isInteger(word) || word < 0)) {
      throw new InvalidArgumentError('Random state must be four unsigned 32-bit integers.', {
        argument: 'state',
      });
    }
    [this.s0, this.s1, this.s2, this.s3] = state.map((word) => word >>> 0) as RandomState;
  }

  /** Next unsigned 32-bit integer. */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5) >>> 0, 7), 9) >>> 0;
    const t = (this.s1 << 9) >>> 0;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    this.s0 >>>= 0;
    this.s1 >>>= 0;
    this.s2 >>>= 0;
    return result;
  }

  /** Uniform float in [0, 1) with 53 bits of precision. */
  float(): number {
    const high = this.nextUint32() >>> 5;
    const low = this.nextUint32() >>> 6;
    return (high * 67108864 + low) / 9007199254740992;
  }

  /** Uniform integer in [0, maxExclusive). */
  int(maxExclusive: number): number {
    if (!Number.isInteger(maxExclusive) || maxExclusive <= 0) {
      throw new InvalidArgumentError(`int() needs a positive integer bound, got ${maxExclusive}.`, {
        argument: 'maxExclusive',
      });
    }
    return Math.floor(this.float() * maxExclusive);
  }

  /** Standard normal sample (Box-Muller). */
  normal(): number {
    let u = this.float();
    while (u === 0) u = this.float();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.float());
  }

  /** A uniformly chosen element; throws on an empty array. */
  choice<T>(items: readonly T[]): T {
    if (items.length === 0) {
      throw new InvalidArgumentError('choice() on an empty array.', { argument: 'items' });
    }
    return items[this.int(items.length)]!;
  }

  /** Index drawn with probability proportional to `weights` (non-negative, not all zero). */
  weightedIndex(weights: ArrayLike<number>): number {
    let total = 0;
    for (let index = 0; index < weights.length; index += 1) total += weights[index]!;
    if (!(total > 0)) {
      throw new InvalidArgumentError('weightedIndex() needs a positive total weight.', {
        argument: 'weights',
      });
    }
    let target = this.float() * total;
    for (let index = 0; index < weights.length; index += 1) {
      target -= weights[index]!;
      if (target < 0) return index;
    }
    return weights.length - 1;
  }

  /** Shuffles `items` in place (Fisher-Yates) and returns it. */
  shuffle<T>(items: T[]): T[] {
    for (let index = items.length - 1; index > 0; index -= 1) {
      const other = this.int(index + 1);
      [items[index], items[other]] = [items[other]!, items[index]!];
    }
    return items;
  }

  /**
   * An independent generator derived from this one's current state and `label`,
   * without advancing this one. The same state and label give the same stream.
   */
  fork(label: string): SeededRandom {
    const mixed = (this.s0 ^ rotl(this.s1, 7) ^ rotl(this.s2, 13) ^ rotl(this.s3, 19)) >>> 0;
    return new SeededRandom((mixed ^ hashString(label)) >>> 0);
  }
}
