/**
 * `serveDreamGym`: a domain's DreamGym environment (synthetic, or real with `mode: 'real'`)
 * served over OpenEnv, with the curriculum, the replay buffer and the run folder kept by a
 * {@link DreamGymService}. What `dreamgym serve` runs.
 */
import { DreamGymService, type DreamGymServiceOptions } from './dreamgym-service.js';
import { EnvironmentServer, type EnvironmentServerSettings } from './environment-server.js';
import { type Logger, silentLogger } from './logger.js';

/** Options of {@link serveDreamGym}: the run's (see `DreamGymServiceOptions`) and the server's. */
export interface ServeDreamGymOptions extends DreamGymServiceOptions {
  /** Host, port, session cap, timeouts, payload limit. */
  server?: EnvironmentServerSettings;
  /** Version reported by `/metadata` and `/openapi.json`. */
  version?: string;
  logger?: Logger;
}

/** A running served DreamGym environment. */
export interface ServedDreamGym {
  /** Base URL for OpenEnv clients (`http://127.0.0.1:8000`; WebSocket at `ws://.../ws`). */
  url: string;
  port: number;
  service: DreamGymService;
  server: EnvironmentServer;
  /** Graceful shutdown: steps in flight finish, then the run is checkpointed. */
  close(): Promise<void>;
}

/** Opens (or resumes) the run, then serves it. */
export async function serveDreamGym(options: ServeDreamGymOptions): Promise<ServedDreamGym> {
  const logger = options.logger ?? silentLogger;
  const service = await DreamGymService.open({ ...options, logger });
  const domain = options.adapter.name;
  const server = new EnvironmentServer({
    // The step cap of synthetic episodes caps real ones too (the server enforces it there).
    ...(service.mode === 'real' ? { maxSteps: service.config.maxSteps } : {}),
    ...options.server,
    createEnvironment: () => service.createEnvironment(),
    tasks: service,
    metadata: {
      name: `dreamgym-${domain}`,
      description:
        service.mode === 'synthetic'
          ? `DreamGym synthetic ${domain} environment: the experience model predicts each transition, grounded by the replay buffer; tasks come from DreamGym's curriculum.`
          : `The real ${domain} environment, served by DreamGym; tasks come from its seed tasks.`,
      version: options.version ?? '0.0.0',
      readme_content: options.adapter.prompts.agentInstructions,
      author: 'DreamGym for TypeScript',
      documentation_url: null,
    },
    status: () => service.status(),
    metrics: () => service.metrics(),
    logger,
  });
  let started: { url: string; port: number };
  try {
    started = await server.start();
  } catch (error) {
    await service.close();
    throw error;
  }
  let closing: Promise<void> | undefined;
  return {
    url: started.url,
    port: started.port,
    service,
    server,
    close() {
      closing ??= (async () => {
        await server.close();
        await service.close();
      })();
      return closing;
    },
  };
}
