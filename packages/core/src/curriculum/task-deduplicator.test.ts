import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors.js';
import type { Task } from '../mdp/schemas.js';
import type { EmbeddingModel } from '../models/embedding-model.js';
import { HashingEmbedder } from '../models/hashing-embedder.js';
import { normalizeInstruction, TaskDeduplicator } from './task-deduplicator.js';

function task(id: string, instruction: string, parentId = 'parent'): Task {
  return { id, domain: 'test', instruction, origin: 'generated', parentId, meta: {} };
}

describe('normalizeInstruction', () => {
  it('ignores case, spacing, trailing punctuation and Unicode width forms', () => {
    expect(normalizeInstruction('  Put the  Apple\tin the FRIDGE. ')).toBe(
      'put the apple in the fridge',
    );
    expect(normalizeInstruction('Ｐut a mug on the desk!!')).toBe('put a mug on the desk');
    expect(normalizeInstruction('Is it on the desk?')).toBe('is it on the desk');
  });
});

describe('TaskDeduplicator (exact duplicates)', () => {
  it('rejects candidates equal to known tasks or to earlier candidates, in candidate order', async () => {
    const known = [task('k1', 'Put the apple in the fridge.', 'root')];
    const candidates = [
      task('c1', 'put the apple in the fridge'),
      task('c2', 'Put a mug on the desk.'),
      task('c3', 'Heat the egg and put it in the garbage can.'),
      task('c4', 'PUT A MUG ON THE DESK'),
    ];
    const { accepted, rejected } = await new TaskDeduplicator().filter(candidates, known);
    expect(accepted.map((t) => t.id)).toEqual(['c2', 'c3']);
    expect(rejected).toEqual([
      expect.objectContaining({
        reason: 'exact-duplicate',
        instruction: 'put the apple in the fridge',
        duplicateOf: 'Put the apple in the fridge.',
        parentId: 'parent',
      }),
      expect.objectContaining({ reason: 'exact-duplicate', duplicateOf: 'Put a mug on the desk.' }),
    ]);
  });

  it('checks its threshold', () => {
    expect(() => new TaskDeduplicator({ similarityThreshold: 0 })).toThrow(ConfigError);
    expect(() => new TaskDeduplicator({ similarityThreshold: 1.01 })).toThrow(ConfigError);
    expect(new TaskDeduplicator({ similarityThreshold: 1 }).similarityThreshold).toBe(1);
  });
});

describe('TaskDeduplicator (near-duplicates, HashingEmbedder)', () => {
  it('embeds each known instruction once across calls', async () => {
    const hashing = new HashingEmbedder();
    const embedded: string[] = [];
    const counting: EmbeddingModel = {
      id: hashing.id,
      dimension: hashing.dimension,
      embed: (texts) => {
        embedded.push(...texts);
        return hashing.embed(texts);
      },
    };
    const deduplicator = new TaskDeduplicator({ embedder: counting });
    const known = [
      task('k1', 'put a clean apple in the fridge'),
      task('k2', 'examine the book with the desklamp'),
    ];
    const first = await deduplicator.filter([task('c1', 'put a hot mug in the cabinet')], known);
    expect(first.accepted).toHaveLength(1);
    expect(embedded).toHaveLength(3);
    const second = await deduplicator.filter(
      [
        task('c2', 'then put a clean apple in the fridge'),
        task('c3', 'put a cold apple in the fridge'),
      ],
      [...known, ...first.accepted],
    );
    // Only the two new candidates were embedded.
    expect(embedded).toHaveLength(5);
    expect(second.accepted.map((t) => t.id)).toEqual(['c3']);
    expect(second.rejected).toEqual([
      expect.objectContaining({
        reason: 'near-duplicate',
        duplicateOf: 'put a clean apple in the fridge',
      }),
    ]);
  });
});

describe('TaskDeduplicator (task identity: instruction and first state)', () => {
  const start = (text: string) => ({ initialObservation: { text } });
  const board = (id: string, text: string, parentId = 'parent'): Task => ({
    ...task(id, 'Solve the puzzle.', parentId),
    ...start(text),
  });

  it('keeps tasks that share an instruction sentence but start from different states', async () => {
    // A domain whose every task says one sentence: what differs is the board it starts from.
    const known = [board('k1', 'Board: 1 2 3 / 4 _ 5', 'root')];
    const candidates = [
      board('c1', 'Board: 2 1 3 / 4 _ 5'),
      board('c2', 'Board:  1 2 3 /\n4 _ 5'), // the known board, spaced otherwise
      board('c3', 'Board: 2 1 3 / 4 _ 5'), // c1's board again
      board('c4', 'Board: 5 4 3 / 2 _ 1'),
    ];
    const { accepted, rejected } = await new TaskDeduplicator({
      embedder: new HashingEmbedder(),
    }).filter(candidates, known);
    expect(accepted.map((t) => t.id)).toEqual(['c1', 'c4']);
    expect(rejected.map((r) => [r.instruction, r.reason, r.detail])).toEqual([
      [
        'Solve the puzzle.',
        'exact-duplicate',
        'same instruction as "Solve the puzzle." (task k1), from the same first state',
      ],
      [
        'Solve the puzzle.',
        'exact-duplicate',
        'same instruction as "Solve the puzzle." (task c1), from the same first state',
      ],
    ]);
  });

  it('compares near-duplicates only among tasks of the same first state', async () => {
    const kitchen = 'You are in the kitchen. You see a fridge 1.';
    const known = [{ ...task('k1', 'put a clean apple in the fridge', 'root'), ...start(kitchen) }];
    const { accepted, rejected } = await new TaskDeduplicator({
      embedder: new HashingEmbedder(),
    }).filter(
      [
        { ...task('c1', 'then put a clean apple in the fridge'), ...start(kitchen) },
        { ...task('c2', 'then put a clean apple in the fridge'), ...start('You are in the hall.') },
      ],
      known,
    );
    expect(accepted.map((t) => t.id)).toEqual(['c2']);
    expect(rejected).toEqual([
      expect.objectContaining({
        reason: 'near-duplicate',
        duplicateOf: 'put a clean apple in the fridge',
      }),
    ]);
  });

  it('compares a task that records no first state with every task, by its instruction', async () => {
    const known = [task('k1', 'Solve the puzzle.', 'root')];
    const { accepted, rejected } = await new TaskDeduplicator().filter(
      [board('c1', 'Board: 2 1 3 / 4 _ 5'), task('c2', 'Solve the puzzle')],
      known,
    );
    expect(accepted).toEqual([]);
    expect(rejected.map((r) => r.detail)).toEqual([
      'same instruction as "Solve the puzzle." (task k1), one of them records no first state',
      'same instruction as "Solve the puzzle." (task k1), one of them records no first state',
    ]);
  });
});
