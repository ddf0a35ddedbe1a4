/**
 * Options of the real ALFWorld connector, as a zod schema (the source of truth) with the
 * inferred type.
 */
import { z } from 'zod';

/** Options of {@link connectAlfworldReal}. */
export const AlfworldRealOptionsSchema = z.object({
  /**
   * Directory holding the ALFWorld game files (`train/`, `valid_seen/`, `valid_unseen/`,
   * each `<task>/<trial>/game.tw-pddl`). Required unless `url` attaches to a server that
   * already serves one. Defaults to `$DREAMGYM_DATA_DIR/alfworld` when that is set.
   */
  dataDir: z.string().min(1).optional(),
  /**
   * URL of a running AgentGym-protocol ALFWorld server (e.g. `http://127.0.0.1:36001`) to
   * attach to instead of starting one. Attached servers are never started, restarted or
   * killed by the connector.
   */
  url: z.url().optional(),
  /**
   * Python interpreter with `alfworld` and `textworld` installed. Default: the project
   * virtualenv created by `scripts/setup.sh` (`<repository>/.venv/bin/python`), then
   * `python3` on the PATH.
   */
  pythonPath: z.string().min(1).optional(),
  /** TCP port for the started server on 127.0.0.1; 0 picks a free one. Default 0. */
  port: z.number().int().min(0).max(65_535).default(0),
  /** Milliseconds to wait for a started server to answer `GET /health`. Default 120 000. */
  startTimeoutMs: z.number().int().positive().default(120_000),
  /** Milliseconds before one HTTP request to the server is abandoned. Default 60 000. */
  requestTimeoutMs: z.number().int().positive().default(60_000),
  /**
   * Step limit of one episode: after this many actions the episode ends with `done` and
   * `done` and `truncated`. Default 50 (AgentGym's and the ALFWorld papers' budget).
   */
  maxSteps: z.number().int().positive().default(50),
  /**
   * Ask the engine's PDDL planner for the expert plan from the current state after every
   * step (read it with `environment.expertPlan()`). Costs a planner call per step. Default false.
   */
  expertPlan: z.boolean().default(false),
  /** Restart a started server that died (the running episode fails; the next reset works). Default true. */
  restartOnCrash: z.boolean().default(true),
});

/** Options of {@link connectAlfworldReal}, after defaults. */
export type AlfworldRealOptions = z.infer<typeof AlfworldRealOptionsSchema>;
/** Options of {@link connectAlfworldReal} as a caller writes them (defaults optional). */
export type AlfworldRealOptionsInput = z.input<typeof AlfworldRealOptionsSchema>;
