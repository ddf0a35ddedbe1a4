/**
 * ALFWorld-like transitions in any number, for the replay benchmarks: real expert steps from
 * $DREAMGYM_DATA_DIR/alfworld/expert_trajectories.jsonl with their object and receptacle
 * numbers re-drawn, so texts stay realistic while a buffer grows past the data; like real
 * experience, many share their state and action.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DatasetFormatError, SeededRandom, type Transition } from '@dreamgym/core';
import { readJsonlLines } from '@dreamgym/core/mdp';

interface ExpertTrajectory {
  game: string;
  conversations: { from: 'human' | 'gpt'; value: string }[];
}

export interface Template {
  state: string;
  action: string;
  next: string;
  instruction: string;
  game: string;
}

export async function loadTemplates(): Promise<Template[]> {
  const root = process.env.DREAMGYM_DATA_DIR ?? resolve('../../shared/data');
  const file = join(root, 'alfworld', 'expert_trajectories.jsonl');
  if (!existsSync(file)) {
    throw new Error(`${file} does not exist: set DREAMGYM_DATA_DIR to the shared data directory.`);
  }
  const templates: Template[] = [];
  for await (const { line, value } of readJsonlLines(file)) {
    const trajectory = value as ExpertTrajectory;
    if (typeof trajectory?.game !== 'string' || !Array.isArray(trajectory.conversations)) {
      throw new DatasetFormatError('expected {game, conversations}', { file, line });
    }
    const turns = trajectory.conversations;
    const instruction = /Your task is to: (.*)/.exec(turns[0]?.value ?? '')?.[1] ?? '';
    for (let index = 1; index + 1 < turns.length; index += 2) {
      templates.push({
        state: turns[index - 1]!.value,
        action: turns[index]!.value,
        next: turns[index + 1]!.value,
        instruction,
        game: trajectory.game,
      });
    }
  }
  return templates;
}

/** A template with its numbers re-drawn (the same number maps to the same new one). */
function vary(template: Template, random: SeededRandom): Omit<Template, 'game'> {
  const mapping = new Map<string, string>();
  const renumber = (text: string) =>
    text.replace(/\b\d+\b/g, (number) => {
      let replacement = mapping.get(number);
      if (!replacement) {
        replacement = String(1 + random.int(20));
        mapping.set(number, replacement);
      }
      return replacement;
    });
  return {
    state: renumber(template.state),
    action: renumber(template.action),
    next: renumber(template.next),
    instruction: renumber(template.instruction),
  };
}

export function makeTransitions(templates: Template[], count: number, seed: number): Transition[] {
  const random = new SeededRandom(seed);
  const transitions: Transition[] = [];
  for (let index = 0; index < count; index += 1) {
    const template = templates[random.int(templates.length)]!;
    const text = vary(template, random);
    transitions.push({
      id: `bench-${seed}-${index}`,
      domain: 'alfworld',
      taskId: template.game,
      instruction: text.instruction,
      trajectoryId: `${template.game}#${index}`,
      stepIndex: 0,
      state: { text: text.state },
      action: text.action,
      // Keeps every transition distinct for duplicate counting; not part of phi.
      nextState: { text: `${text.next} [${index}]` },
      reward: 0,
      done: false,
      source: index % 10 === 0 ? 'offline' : 'synthetic',
    });
  }
  return transitions;
}
