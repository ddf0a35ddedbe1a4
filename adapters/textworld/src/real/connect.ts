/**
 * The real environment: TextWorld's engine playing the data directory's generated games,
 * behind the adapter's Python server, as a DreamGym `Environment`.
 */
import type { TextworldRealOptionsInput } from './options.js';
import { TextworldRealEnvironment } from './textworld-real-environment.js';

/**
 * Connects to the real TextWorld engine: starts the Python server from the project
 * virtualenv (or attaches to `options.url`), waits until it answers `/health`, opens a
 * session and returns it as a {@link TextworldRealEnvironment} (an `Environment`).
 *
 * `reset(task)` plays the game named by `task.meta.game` (else `task.id`), e.g.
 * `train/cooking-r2-s1`. `step(command)` answers with the engine's text and admissible
 * commands; the reward is 1 on the step that wins the game, else 0; the episode ends when
 * the game is won or lost, or after `maxSteps` commands (`truncated`). A command the engine
 * would not accept here is played (the engine says why) and flagged `info.invalidAction`.
 *
 * @example
 * const environment = await connectTextworldReal({ dataDir: 'data/textworld' });
 * const observation = await environment.reset(task);
 * const { reward, done } = await environment.step(observation.actions![0]!);
 * await environment.close();
 */
export function connectTextworldReal(
  options: TextworldRealOptionsInput = {},
): Promise<TextworldRealEnvironment> {
  return TextworldRealEnvironment.connect(options);
}
