/**
 * Adding transitions to a replay buffer: a batch is sorted into records to store and
 * duplicates (the same id again, or the same content under another id, counted as another
 * occurrence of the stored transition); the new records are logged, given slots and rows
 * (one vector embedded per phi input not stored yet), and the oldest synthetic/real ones
 * evicted past the capacity.
 */
import { ConfigError } from '../errors.js';
import type { Transition } from '../mdp/schemas.js';
import type { BufferContents } from './buffer-contents.js';
import { ensureIndex, phiInput } from './buffer-index.js';
import { addEntry, appendToLog, compactBuffer } from './buffer-persistence.js';
import type { BufferState } from './buffer-state.js';
import { embedPhi } from './phi.js';
import { appendNewRows } from './recall-upkeep.js';
import { sameContent } from './transition-keys.js';

/** A batch sorted by {@link planBatch}. */
export interface BatchPlan {
  /** Transitions to store as records of their own, in order. */
  fresh: Transition[];
  /** Occurrences per fresh transition (parallel to `fresh`). */
  freshCounts: number[];
  /** Ids of the duplicates counted on each fresh transition. */
  freshAliases: string[][];
  /** Stored slots whose transition occurred again in this batch: slot -> new count, ids. */
  recounted: Map<number, { count: number; ids: string[] }>;
  /** Transitions not stored as records of their own. */
  duplicates: number;
  /** Of the duplicates, those counted as another occurrence (under a new id). */
  counted: number;
}

/**
 * Sorts `transitions` into fresh records and duplicates of stored or earlier ones.
 *
 * @throws ConfigError for an id already stored (or earlier in the batch) with other content.
 */
export function planBatch(contents: BufferContents, transitions: readonly Transition[]): BatchPlan {
  const { slots, withInstruction } = contents;
  const plan: BatchPlan = {
    fresh: [],
    freshCounts: [],
    freshAliases: [],
    recounted: new Map(),
    duplicates: 0,
    counted: 0,
  };
  const { fresh, freshCounts, freshAliases, recounted } = plan;
  const batchById = new Map<string, Transition>();
  /** Position in `fresh` by content text. */
  const batchByContent = new Map<string, number>();
  transitions.forEach((transition, index) => {
    // A stored id, or the id of a duplicate already counted: the same occurrence again.
    const sameId = slots.slotOf(transition.id) ?? slots.aliasSlotOf(transition.id);
    const stored = sameId === undefined ? batchById.get(transition.id) : slots.peek(sameId);
    if (stored) {
      if (sameContent(stored, transition, withInstruction)) {
        // The same record added again: no new occurrence.
        plan.duplicates += 1;
        return;
      }
      throw new ConfigError(
        `ReplayBuffer.add: transitions.${index}.id \`${transition.id}\` is already in the buffer with a different state, action or next state. Give each transition a unique id.`,
        { field: `transitions.${index}.id` },
      );
    }
    const twinSlot = slots.twinOf(transition);
    if (twinSlot !== undefined) {
      const entry = recounted.get(twinSlot) ?? { count: slots.count(twinSlot), ids: [] };
      entry.count += 1;
      entry.ids.push(transition.id);
      recounted.set(twinSlot, entry);
      batchById.set(transition.id, transition);
      plan.duplicates += 1;
      plan.counted += 1;
      return;
    }
    const key = contentText(transition, withInstruction);
    const twin = batchByContent.get(key);
    if (twin !== undefined) {
      freshCounts[twin]! += 1;
      freshAliases[twin]!.push(transition.id);
      batchById.set(transition.id, transition);
      plan.duplicates += 1;
      plan.counted += 1;
      return;
    }
    batchById.set(transition.id, transition);
    batchByContent.set(key, fresh.length);
    fresh.push(transition);
    freshCounts.push(1);
    freshAliases.push([]);
  });
  return plan;
}

/**
 * Logs and stores a planned batch: the new counts of stored transitions, then the fresh
 * records (embedding one vector per phi input not stored yet, in one call). Each record is
 * committed to the log by the time this resolves.
 */
export async function storeBatch(state: BufferState, plan: BatchPlan): Promise<void> {
  const { slots, withInstruction } = state.contents;
  const { fresh, freshCounts, freshAliases } = plan;
  await appendToLog(
    state,
    [...plan.recounted].map(([slot, { count, ids }]) => ({
      op: 'count' as const,
      id: slots.peek(slot).id,
      count,
      ids,
    })),
  );
  for (const [slot, { count, ids }] of plan.recounted) {
    slots.setCount(slot, count);
    for (const id of ids) slots.addAlias(slot, id);
  }
  if (fresh.length === 0) return;

  // faiss first: a missing addon must fail before anything reaches the log.
  await ensureIndex(state);
  // Only transitions of a state and action not stored yet need a vector: one per new phi.
  const newPhi = new Map<string, number>();
  const toEmbed: Transition[] = [];
  for (const transition of fresh) {
    if (state.contents.findRow(transition) !== undefined) continue;
    const key = phiText(transition, withInstruction);
    if (newPhi.has(key)) continue;
    newPhi.set(key, toEmbed.length);
    toEmbed.push(transition);
  }
  const { dimension } = state;
  const embedded = new Float32Array(toEmbed.length * dimension);
  await embedPhi(state.embedder, toEmbed.map(phiInput), state.phiWeights, embedded);
  // One write for the whole batch; when it fails, none of the batch enters the buffer.
  const logged = await appendToLog(
    state,
    fresh.map((transition, position) =>
      addEntry(transition, freshCounts[position]!, freshAliases[position]!),
    ),
  );
  const rows = new Float32Array(toEmbed.length * dimension);
  let created = 0;
  for (const [position, transition] of fresh.entries()) {
    const registered = state.contents.register(transition, {
      count: freshCounts[position]!,
      ...(logged.length > 0 ? { logged: logged[position]! } : {}),
    });
    for (const id of freshAliases[position]!) slots.addAlias(registered.slot, id);
    if (!registered.created) continue;
    const source = newPhi.get(phiText(transition, withInstruction))!;
    rows.set(embedded.subarray(source * dimension, (source + 1) * dimension), created * dimension);
    created += 1;
  }
  if (created > 0) await appendNewRows(state, rows.subarray(0, created * dimension), created);
}

/**
 * FIFO eviction of synthetic/real transitions while over `capacity`; offline ones stay.
 * Compacts once the evicted share of slots reaches `compactAt`. Returns how many it evicted.
 */
export async function evictOverCapacity(
  state: BufferState,
  capacity: number | undefined,
  compactAt: number,
): Promise<number> {
  if (capacity === undefined) return 0;
  const { slots } = state.contents;
  let evicted = 0;
  while (slots.live > capacity && state.evictCursor < slots.length) {
    const slot = state.evictCursor;
    state.evictCursor += 1;
    if (!slots.isLive(slot) || slots.source(slot) === 'offline') continue;
    await appendToLog(state, [{ op: 'evict', id: slots.peek(slot).id }]);
    state.contents.unregister(slot);
    evicted += 1;
  }
  const dead = slots.length - slots.live;
  if (dead > 0 && dead >= compactAt * slots.length) await compactBuffer(state, false);
  return evicted;
}

/** The texts that make two transitions exact duplicates, as one Map key. */
function contentText(transition: Transition, withInstruction: boolean): string {
  return [
    transition.domain,
    transition.state.text,
    transition.action,
    transition.nextState.text,
    withInstruction ? transition.instruction : '',
  ].join('\u0000');
}

/** The phi inputs of a transition, as one Map key. */
function phiText(transition: Transition, withInstruction: boolean): string {
  return [
    transition.state.text,
    transition.action,
    withInstruction ? transition.instruction : '',
  ].join('\u0000');
}
