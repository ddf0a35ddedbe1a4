import type { WebshopRealOptionsInput } from './options.js';
import { WebshopRealEnvironment } from './webshop-real-environment.js';

/**
 * Connects to a running WebShop server (AgentGym WebShop protocol) at `options.url` (or
 * `$DREAMGYM_WEBSHOP_URL`): checks that it answers, opens an environment on it and returns
 * it as a {@link WebshopRealEnvironment} (an `Environment`).
 *
 * `reset(task)` plays the server's goal `task.meta.sessionId`, else `task.meta.goalIndex`.
 *
 * @example
 * const environment = await connectWebshopReal({ url: 'http://127.0.0.1:36001' });
 * const observation = await environment.reset(task);
 * const { reward, done, info } = await environment.step(observation.actions![0]!);
 * await environment.close();
 */
export function connectWebshopReal(
  options: WebshopRealOptionsInput = {},
): Promise<WebshopRealEnvironment> {
  return WebshopRealEnvironment.connect(options);
}
