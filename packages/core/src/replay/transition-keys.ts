/**
 * Hash keys of transitions that the replay buffer's slot table and phi rows look records up
 * by: an id, the content that makes two transitions exact duplicates, and the inputs of
 * phi(s, a) that make two transitions phi twins (the same vector). Small integers, so that a
 * million of them live in plain arrays and typed-array hash chains (see `slot-chains.ts`).
 */
import type { Transition } from '../mdp/schemas.js';

/** 30-bit hash of a text (a small integer, stored unboxed in a plain array). */
export function textHash(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1)
    hash = Math.imul(hash ^ text.charCodeAt(index), 16777619);
  return (hash >>> 2) & 0x3fffffff;
}

/** 53-bit hash of `texts` in order (a separator between them, so `ab|c` and `a|bc` differ). */
function textsHash(texts: readonly string[]): number {
  let first = 0xdeadbeef;
  let second = 0x41c6ce57;
  for (const text of texts) {
    for (let index = 0; index < text.length; index += 1) {
      const code = text.charCodeAt(index);
      first = Math.imul(first ^ code, 2654435761);
      second = Math.imul(second ^ code, 1597334677);
    }
    first = Math.imul(first ^ 0x1f, 2654435761);
    second = Math.imul(second ^ 0x1f, 1597334677);
  }
  first =
    Math.imul(first ^ (first >>> 16), 2246822507) ^ Math.imul(second ^ (second >>> 13), 3266489909);
  second =
    Math.imul(second ^ (second >>> 16), 2246822507) ^ Math.imul(first ^ (first >>> 13), 3266489909);
  return 4294967296 * (2097151 & second) + (first >>> 0);
}

/**
 * 53-bit hash of what makes two transitions exact duplicates (domain, state, action, next
 * state, and the instruction when `withInstruction`): a cheap key; equal hashes are
 * confirmed with {@link sameContent}.
 */
export function contentHash(transition: Transition, withInstruction = false): number {
  const texts = [
    transition.domain,
    transition.state.text,
    transition.action,
    transition.nextState.text,
  ];
  if (withInstruction) texts.push(transition.instruction);
  return textsHash(texts);
}

/** {@link contentHash} cut to 30 bits, the key of a `SlotChains`. */
export function contentKey(transition: Transition, withInstruction: boolean): number {
  return contentHash(transition, withInstruction) % 1073741824;
}

/**
 * True when two transitions are exact duplicates: same domain, state, action and next
 * state, and the same instruction when `withInstruction`.
 */
export function sameContent(a: Transition, b: Transition, withInstruction: boolean): boolean {
  return (
    a.domain === b.domain &&
    a.action === b.action &&
    a.state.text === b.state.text &&
    a.nextState.text === b.nextState.text &&
    (!withInstruction || a.instruction === b.instruction)
  );
}

/**
 * 53-bit hash of what phi(s, a) embeds for a transition: state, action, and the instruction
 * when `withInstruction` (phi weighs it). Transitions with equal phi inputs have one vector.
 */
export function phiHash(transition: Transition, withInstruction: boolean): number {
  const texts = [transition.state.text, transition.action];
  if (withInstruction) texts.push(transition.instruction);
  return textsHash(texts);
}

/** True when phi embeds the same inputs for both transitions. */
export function samePhiInputs(a: Transition, b: Transition, withInstruction: boolean): boolean {
  return (
    a.action === b.action &&
    a.state.text === b.state.text &&
    (!withInstruction || a.instruction === b.instruction)
  );
}
