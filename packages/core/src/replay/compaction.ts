/**
 * Compaction and rebuild of a replay buffer's contents: evicted slots and rows no live slot
 * uses are dropped, live transitions renumbered into consecutive slots (oldest first) and
 * their rows into consecutive rows (in order of first use). Without re-embedding, each kept
 * row keeps its vector; re-embedding (a rebuild: another embedder, phi weights or a repair)
 * groups the transitions by their phi inputs afresh and leaves the new rows to be embedded.
 */
import type { Transition } from '../mdp/schemas.js';
import { BufferContents } from './buffer-contents.js';

/** The compacted contents and what the rewritten log and files need. */
export interface Compacted {
  contents: BufferContents;
  /** The live transitions in their new slot order, and their occurrence counts. */
  transitions: Transition[];
  counts: number[];
  /** Ids of the duplicates counted on each. */
  aliases: string[][];
  /** Rows whose vectors are still to be embedded (in row order; empty without re-embedding). */
  rowsToEmbed: number[];
}

/** Options of {@link compactContents}. */
export interface CompactionOptions {
  logFile: string;
  /** Whether phi embeds the instruction (may differ from before in a rebuild). */
  withInstruction: boolean;
  dimension: number;
  /** Group by phi inputs afresh and leave every row to embed, instead of keeping vectors. */
  reembed: boolean;
}

/** Compacts `old` into new contents (see the module comment). */
export function compactContents(old: BufferContents, options: CompactionOptions): Compacted {
  const contents = new BufferContents(options.logFile, options.withInstruction, options.dimension);
  const liveSlots = old.slots.liveIn(0, old.slots.length);
  const transitions = liveSlots.map((slot) => old.slots.served(slot));
  const counts = liveSlots.map((slot) => old.slots.count(slot));
  const aliases = liveSlots.map((slot) => old.slots.aliasesOf(slot));
  const rowsToEmbed: number[] = [];
  const newRowOf = new Map<number, number>();
  const keptVectors: number[] = [];
  liveSlots.forEach((slot, position) => {
    const transition = transitions[position]!;
    const count = counts[position]!;
    if (options.reembed) {
      const { slot: next, row, created } = contents.register(transition, { count });
      for (const id of aliases[position]!) contents.slots.addAlias(next, id);
      if (created) rowsToEmbed.push(row);
      return;
    }
    const oldRow = old.rows.rowOf(slot);
    const known = newRowOf.get(oldRow);
    const {
      slot: next,
      row,
      created,
    } = contents.register(transition, {
      count,
      row: known ?? contents.rows.size,
    });
    for (const id of aliases[position]!) contents.slots.addAlias(next, id);
    if (created) {
      newRowOf.set(oldRow, row);
      keptVectors.push(oldRow);
    }
  });
  if (!options.reembed) {
    const { dimension } = options;
    const batch = 8192;
    const rows = new Float32Array(dimension * Math.min(batch, Math.max(1, keptVectors.length)));
    for (let from = 0; from < keptVectors.length; from += batch) {
      const part = keptVectors.slice(from, from + batch);
      part.forEach((oldRow, index) => {
        rows.set(old.vectors.row(oldRow), index * dimension);
      });
      contents.vectors.append(rows, part.length);
    }
  }
  return { contents, transitions, counts, aliases, rowsToEmbed };
}
