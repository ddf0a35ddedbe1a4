/**
 * `WorldMemory`: what the offline data saw of each task's own world. For every world (the
 * game a task is played in) and every action on one entity (`go to shelf 1`, `open drawer
 * 2`), the outcome the first time an offline episode of that world took it, before the
 * episode had moved anything there.
 *
 * Why: a retrieval model answers `go to shelf 1` with what some *other* game showed on its
 * shelf 1 (a desk lamp and the very object the task asks for), and a policy learns to walk
 * straight to where the object never is in the real game. Where the data has seen this
 * world's shelf 1, that is the answer. Actions on two entities (`take`, `put`, `heat`) are
 * not remembered: their outcome depends on where the agent stands and what it holds, which
 * the episode decides.
 */
import type { ParsedAction } from '../adapter.js';
import type { Task, Trajectory } from '../mdp/schemas.js';
import { worldOf } from '../mdp/task-world.js';
import { parseActionByTokens } from './entity-transfer.js';

/** Options of {@link WorldMemory.fromTrajectories}. */
export interface WorldMemoryOptions {
  /** The domain's action grammar (`adapter.parseAction`). Default: actions split by tokens. */
  parseAction?: (text: string) => ParsedAction;
}

/** What each world's offline episodes first saw, by action. */
export class WorldMemory {
  private readonly outcomes: Map<string, Map<string, string>>;
  private readonly parse: (text: string) => ParsedAction;

  private constructor(
    outcomes: Map<string, Map<string, string>>,
    parse: (text: string) => ParsedAction,
  ) {
    this.outcomes = outcomes;
    this.parse = parse;
  }

  /**
   * Remembers, per world, the first outcome of each one-entity action in the real and offline
   * trajectories (synthetic ones are a model's guesses and are skipped) that came before any
   * step of its episode acting on that entity together with another (a `take` from it, a
   * `put` into it).
   */
  static fromTrajectories(
    trajectories: readonly Trajectory[],
    options: WorldMemoryOptions = {},
  ): WorldMemory {
    const memory = new WorldMemory(new Map(), options.parseAction ?? parseActionByTokens);
    memory.add(trajectories);
    return memory;
  }

  /**
   * Remembers more trajectories (the real episodes of sim-to-real, as they come); an outcome
   * already remembered for a world and action is kept.
   */
  add(trajectories: readonly Trajectory[]): void {
    for (const trajectory of trajectories) {
      if (trajectory.source === 'synthetic') continue;
      const world = worldOf(trajectory.task);
      const seen = this.outcomes.get(world) ?? new Map<string, string>();
      const changed = new Set<string>();
      trajectory.steps.forEach((step, index) => {
        const args = safeArgs(this.parse, step.action);
        if (args === undefined) return;
        if (args.length >= 2) {
          for (const argument of args) changed.add(argument);
          return;
        }
        if (args.length !== 1 || changed.has(args[0]!) || seen.has(step.action)) return;
        const next = trajectory.steps[index + 1]?.observation ?? trajectory.finalObservation;
        if (next !== undefined) seen.set(step.action, next.text);
      });
      if (seen.size > 0) this.outcomes.set(world, seen);
    }
  }

  /** Worlds remembered. */
  get worlds(): number {
    return this.outcomes.size;
  }

  /** Outcomes remembered over all worlds. */
  get size(): number {
    let total = 0;
    for (const seen of this.outcomes.values()) total += seen.size;
    return total;
  }

  /**
   * What `action` showed in `task`'s world, unless this episode already acted on its entity
   * together with another (then the remembered outcome may be stale: the history knows better).
   */
  recall(
    task: Pick<Task, 'id' | 'meta'>,
    history: readonly { action: string }[],
    action: string,
  ): string | undefined {
    const text = this.outcomes.get(worldOf(task))?.get(action);
    if (text === undefined) return undefined;
    const args = safeArgs(this.parse, action);
    if (args === undefined || args.length !== 1) return undefined;
    const entity = args[0]!;
    for (const step of history) {
      const earlier = safeArgs(this.parse, step.action);
      if (earlier && earlier.length >= 2 && earlier.includes(entity)) return undefined;
    }
    return text;
  }
}

function safeArgs(parse: (text: string) => ParsedAction, text: string): string[] | undefined {
  try {
    return parse(text).args;
  } catch {
    return undefined;
  }
}
