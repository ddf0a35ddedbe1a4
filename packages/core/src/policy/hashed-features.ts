/**
 * Feature hashing for the embedded policy and value function: text is split into word
 * tokens, tokens and token pairs are hashed to indices of a fixed-size weight vector.
 * No vocabulary to build or store, and unseen words still get a feature.
 */

/** FNV-1a hash of a string, seeded so that namespaces do not collide. */
export function hashText(text: string, seed = 0x811c9dc5): number {
  let hash = seed >>> 0;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** Mixes two 32-bit hashes into one (murmur3 finaliser over their combination). */
export function combineHashes(first: number, second: number): number {
  let hash = (Math.imul(first ^ 0x9e3779b9, 0x85ebca6b) ^ second) >>> 0;
  hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b) >>> 0;
  hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35) >>> 0;
  return (hash ^ (hash >>> 16)) >>> 0;
}

const TOKEN_PATTERN = /[\p{L}\p{N}]+/gu;

/** Lower-cased word tokens (letters and digits) of `text`, in order, duplicates removed. */
export function tokenize(text: string): string[] {
  const tokens = new Set<string>();
  for (const match of text.toLowerCase().matchAll(TOKEN_PATTERN)) tokens.add(match[0]);
  return [...tokens];
}

/** Hashes of `tokens` within a namespace. */
export function hashTokens(tokens: readonly string[], namespace: number): Uint32Array {
  const hashes = new Uint32Array(tokens.length);
  for (let index = 0; index < tokens.length; index += 1) {
    hashes[index] = hashText(tokens[index]!, namespace);
  }
  return hashes;
}

/** Namespaces of the feature groups, so that the same token pair in two groups differs. */
export const FeatureNamespace = {
  taskAction: hashText('task x action'),
  stateAction: hashText('state x action'),
  historyAction: hashText('recent action x action'),
  action: hashText('action'),
  actionToken: hashText('action token'),
  task: hashText('task'),
  state: hashText('state'),
  taskState: hashText('task x state'),
  history: hashText('recent action'),
  bias: hashText('bias'),
} as const;
