/**
 * Corridor: a tiny text domain with a known optimum, used as the reference
 * implementation of `Environment` and `DomainAdapter` in core's own tests and examples.
 *
 * The agent stands in room 0 of a corridor of `length` rooms. A key lies in room
 * `keyRoom`, a locked door stands in room `doorRoom`. Taking the key and opening the door
 * succeeds (reward 1 on that step); the optimal episode takes
 * `keyRoom + |doorRoom - keyRoom| + 2` steps.
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { DomainAdapter, ParsedAction } from '../adapter.js';
import { ActionParseError, EnvironmentStateError } from '../errors.js';
import type { Environment } from '../mdp/environment.js';
import { readJsonl } from '../mdp/jsonl.js';
import {
  type Observation,
  type Step,
  type StepResult,
  type Task,
  TaskSchema,
  type Trajectory,
  TrajectorySchema,
} from '../mdp/schemas.js';
import type { SeededRandom } from '../random/seeded-random.js';

const CorridorLayoutSchema = z.object({
  length: z.number().int().min(2),
  keyRoom: z.number().int().nonnegative(),
  doorRoom: z.number().int().nonnegative(),
});
type CorridorLayout = z.infer<typeof CorridorLayoutSchema>;

/** What the agent sees in a corridor: the feedback, its room, what is there, what it carries. */
function observeCorridor(
  layout: CorridorLayout,
  position: number,
  holdsKey: boolean,
  feedback: string,
): Observation {
  const sights: string[] = [];
  if (position === layout.keyRoom && !holdsKey) sights.push('a key');
  if (position === layout.doorRoom) sights.push('a door');
  const seen = sights.length > 0 ? ` You see ${sights.join(' and ')}.` : ' The room is empty.';
  const carry = holdsKey ? ' You carry the key.' : '';
  return {
    text: `${feedback} You are in room ${position}.${seen}${carry}`,
    actions: admissibleCorridorActions(layout, position, holdsKey),
  };
}

function admissibleCorridorActions(
  layout: CorridorLayout,
  position: number,
  holdsKey: boolean,
): string[] {
  const actions: string[] = [];
  if (position > 0) actions.push('go left');
  if (position < layout.length - 1) actions.push('go right');
  if (position === layout.keyRoom && !holdsKey) actions.push('take key');
  if (position === layout.doorRoom) actions.push('open door');
  return actions;
}

const ENTRY_FEEDBACK = 'You enter the corridor.';

/** A corridor task with the key in `keyRoom` and the door in `doorRoom`, with its initial state. */
export function corridorTask(layout: CorridorLayout, id?: string): Task {
  CorridorLayoutSchema.parse(layout);
  return TaskSchema.parse({
    id: id ?? `corridor-${layout.length}-${layout.keyRoom}-${layout.doorRoom}`,
    domain: 'corridor',
    instruction: `The key is in room ${layout.keyRoom}. Take the key and open the door in room ${layout.doorRoom}.`,
    initialObservation: observeCorridor(layout, 0, false, ENTRY_FEEDBACK),
    meta: { ...layout },
  });
}

const ACTION_PATTERN = /^\s*(go left|go right|take key|open door)\s*$/i;

function parseCorridorAction(text: string): ParsedAction {
  const match = ACTION_PATTERN.exec(text);
  if (!match) {
    throw new ActionParseError(
      `"${text}" is not a corridor action. Valid actions: "go left", "go right", "take key", "open door".`,
      { action: text },
    );
  }
  const canonical = match[1]!.toLowerCase();
  const [verb, object] = canonical.split(' ') as [string, string];
  return { type: verb, args: [object], text: canonical };
}

/** Options of {@link CorridorEnvironment}. */
export interface CorridorEnvironmentOptions {
  /** Steps after which the episode is cut off (`done` and `truncated`, reward 0). Default 30. */
  maxSteps?: number;
}

/** The corridor environment. */
export class CorridorEnvironment implements Environment {
  private layout: CorridorLayout | undefined;
  private position = 0;
  private holdsKey = false;
  private steps = 0;
  private done = false;
  private closed = false;
  private readonly maxSteps: number;

  constructor(options: CorridorEnvironmentOptions = {}) {
    this.maxSteps = options.maxSteps ?? 30;
  }

  async reset(task: Task): Promise<Observation> {
    if (this.closed) throw new EnvironmentStateError('reset() on a closed CorridorEnvironment.');
    const layout = CorridorLayoutSchema.safeParse(task.meta);
    if (!layout.success) {
      throw new EnvironmentStateError(
        `Task ${task.id} is not a corridor task: meta needs length, keyRoom and doorRoom.`,
      );
    }
    this.layout = layout.data;
    this.position = 0;
    this.holdsKey = false;
    this.steps = 0;
    this.done = false;
    return this.observe(ENTRY_FEEDBACK);
  }

  async step(action: string): Promise<StepResult> {
    if (this.closed) throw new EnvironmentStateError('step() on a closed CorridorEnvironment.');
    if (!this.layout) throw new EnvironmentStateError('step() before reset().');
    if (this.done) throw new EnvironmentStateError('step() after the episode ended; call reset().');
    this.steps += 1;
    const layout = this.layout;
    let feedback: string;
    let reward = 0;
    let success = false;
    let invalidAction = false;
    const admissible = this.admissible();
    const parsed = ACTION_PATTERN.test(action) ? parseCorridorAction(action).text : undefined;
    if (parsed === undefined || !admissible.includes(parsed)) {
      feedback = 'Nothing happens.';
      invalidAction = true;
    } else if (parsed === 'go left' || parsed === 'go right') {
      this.position += parsed === 'go left' ? -1 : 1;
      feedback = `You walk to room ${this.position}.`;
    } else if (parsed === 'take key') {
      this.holdsKey = true;
      feedback = 'You pick up the key.';
    } else if (this.holdsKey) {
      feedback = 'You unlock and open the door.';
      reward = 1;
      success = true;
    } else {
      feedback = 'The door is locked.';
    }
    const truncated = !success && this.steps >= this.maxSteps;
    this.done = success || truncated;
    return {
      observation: this.observe(feedback),
      reward,
      done: this.done,
      truncated,
      info: { success, invalidAction, layoutLength: layout.length },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private admissible(): string[] {
    return admissibleCorridorActions(this.layout!, this.position, this.holdsKey);
  }

  private observe(feedback: string): Observation {
    return observeCorridor(this.layout!, this.position, this.holdsKey, feedback);
  }
}

/** Every corridor layout of `length` rooms (every key room and door room), as tasks. */
export function corridorTasks(length: number): Task[] {
  const tasks: Task[] = [];
  for (let keyRoom = 0; keyRoom < length; keyRoom += 1) {
    for (let doorRoom = 0; doorRoom < length; doorRoom += 1) {
      tasks.push(corridorTask({ length, keyRoom, doorRoom }));
    }
  }
  return tasks;
}

/**
 * The optimal action in `task` (its `meta` holds `keyRoom` and `doorRoom`) from what
 * `observation` shows: the agent's room and whether it carries the key.
 */
export function optimalCorridorAction(task: Task, observation: { text: string }): string {
  const { keyRoom, doorRoom } = task.meta as { keyRoom: number; doorRoom: number };
  const position = Number(/You are in room (\d+)/.exec(observation.text)?.[1] ?? 0);
  const holdsKey = observation.text.includes('You carry the key');
  const goal = holdsKey ? doorRoom : keyRoom;
  if (position < goal) return 'go right';
  if (position > goal) return 'go left';
  return holdsKey ? 'open door' : 'take key';
}

/** How {@link playCorridor} plays. */
export interface CorridorPlayOptions {
  /** Per step, the chance of a random admissible action instead of the optimal one. */
  noise: number;
  /** The environment's step limit. Default 20. */
  maxSteps?: number;
  /** The trajectory's `source`. Default `offline`. */
  source?: Trajectory['source'];
}

/**
 * Plays one episode of `task` on a {@link CorridorEnvironment}: the optimal action with
 * probability `1 - noise` per step, else a random admissible one (a seeded, noisy expert
 * for demonstrations and replay buffers).
 */
export async function playCorridor(
  task: Task,
  random: SeededRandom,
  options: CorridorPlayOptions,
): Promise<Trajectory> {
  const environment = new CorridorEnvironment({ maxSteps: options.maxSteps ?? 20 });
  let observation = await environment.reset(task);
  const steps: Step[] = [];
  for (;;) {
    const action =
      random.float() < options.noise
        ? random.choice(observation.actions ?? [])
        : optimalCorridorAction(task, observation);
    const result = await environment.step(action);
    steps.push({ observation, action, reward: result.reward, done: result.done });
    observation = result.observation;
    if (result.done) {
      await environment.close();
      return {
        task,
        steps,
        finalObservation: observation,
        source: options.source ?? 'offline',
        success: result.info.success === true,
      };
    }
  }
}

/** The corridor domain adapter: the reference `DomainAdapter`. */
export function createCorridorAdapter(): DomainAdapter<string, CorridorEnvironmentOptions> {
  return {
    name: 'corridor',
    toObservation: (raw) => ({ text: raw.trim() }),
    parseAction: parseCorridorAction,
    // Proposed from the state text, as an engine-less synthetic environment needs: the agent
    // can always walk (except left of room 0) and acts on what it sees.
    candidateActions: (observation) => {
      const text = observation.text;
      const room = /You are in room (\d+)/.exec(text);
      const candidates: string[] = [];
      if (room === null || Number(room[1]) > 0) candidates.push('go left');
      candidates.push('go right');
      if (/You see (?:[a-z ]+ and )?a key/.test(text)) candidates.push('take key');
      if (/a door/.test(text)) candidates.push('open door');
      return candidates;
    },
    datasets: {
      trajectories: { load: (dir) => readJsonl(join(dir, 'trajectories.jsonl'), TrajectorySchema) },
      tasks: { load: (dir) => readJsonl(join(dir, 'tasks.jsonl'), TaskSchema) },
    },
    prompts: {
      environmentDescription:
        'A corridor of numbered rooms. One room holds a key, one a locked door. The agent walks left and right, takes the key and opens the door.',
      agentInstructions:
        'Act with one of: "go left", "go right", "take key", "open door". Example: <action>go right</action>',
      taskGenerationGuidance: 'Vary the corridor length and the rooms of the key and the door.',
    },
    mutateTask(task: Task, random: SeededRandom): Task | undefined {
      const layout = CorridorLayoutSchema.safeParse(task.meta);
      if (!layout.success) return undefined;
      const length = layout.data.length;
      const next = { length, keyRoom: random.int(length), doorRoom: random.int(length) };
      const child = corridorTask(
        next,
        `${task.id}~${next.keyRoom}-${next.doorRoom}-${random.int(1e6)}`,
      );
      return { ...child, origin: 'generated', parentId: task.id };
    },
    connectReal: async (options) => new CorridorEnvironment(options),
  };
}
