/** The engine server the real-engine tests share: started on a free port, generous timeouts. */
import { AlfworldServerProcess, defaultAlfworldPython } from './server-process.js';

/** How long a test's `beforeAll` may wait for {@link startTestEngineServer}. */
export const START_HOOK_TIMEOUT_MS = 130_000;

/** Starts an ALFWorld engine server over the game files in `dataDir`. */
export function startTestEngineServer(dataDir: string): Promise<AlfworldServerProcess> {
  return AlfworldServerProcess.start({
    dataDir,
    pythonPath: defaultAlfworldPython(),
    port: 0,
    startTimeoutMs: 120_000,
    requestTimeoutMs: 60_000,
  });
}
