import { AlfworldRealEnvironment } from './alfworld-real-environment.js';
import type { AlfworldRealOptionsInput } from './options.js';

/**
 * Connects to the real ALFWorld engine: starts the Python server from the project
 * virtualenv (or attaches to `options.url`), waits until it answers `/health`, opens a
 * session and returns it as an {@link AlfworldRealEnvironment} (an `Environment`).
 *
 * `reset(task)` plays the game file named by `task.meta.game` (else `task.id`), e.g.
 * `train/<task>/<trial>`. A started server that dies is restarted: the episode it carried
 * fails with an `EnvironmentError` that says so, and the next `reset` works.
 *
 * @example
 * const environment = await connectAlfworldReal({ dataDir: 'data/alfworld' });
 * const observation = await environment.reset(task);
 * const { reward, done } = await environment.step(observation.actions![0]!);
 * await environment.close();
 */
export function connectAlfworldReal(
  options: AlfworldRealOptionsInput = {},
): Promise<AlfworldRealEnvironment> {
  return AlfworldRealEnvironment.connect(options);
}
