/**
 * Options of the real TextWorld connector, as a zod schema (the source of truth) with the
 * inferred types.
 */
import { z } from 'zod';

/** Options of {@link connectTextworldReal}. */
export const TextworldRealOptionsSchema = z.object({
  /**
   * The data directory whose `games/<split>/*.z8` the engine plays (made by
   * `buildTextworldDataset`). Required unless `url` attaches to a server that already serves
   * one. Defaults to `$DREAMGYM_DATA_DIR/textworld` when that is set.
   */
  dataDir: z.string().min(1).optional(),
  /**
   * URL of a running TextWorld server (`python -m dreamgym_textworld_server`) to attach to
   * instead of starting one. Attached servers are never started or stopped by the connector.
   */
  url: z.url().optional(),
  /**
   * Python with `textworld` installed. Default: the nearest `.venv/bin/python` above the
   * working folder (the repository's virtualenv made by `scripts/setup.sh`), else `python3`.
   */
  pythonPath: z.string().min(1).optional(),
  /** TCP port of the started server on 127.0.0.1; 0 picks a free one. Default 0. */
  port: z.number().int().min(0).max(65_535).default(0),
  /** Milliseconds to wait for a started server to answer `GET /health`. Default 60 000. */
  startTimeoutMs: z.number().int().positive().default(60_000),
  /** Milliseconds before one request to the server is abandoned. Default 60 000. */
  requestTimeoutMs: z.number().int().positive().default(60_000),
  /**
   * Step limit of one episode: after this many commands the episode ends with `done` and
   * `truncated`. Default 50 (the longest walkthrough of a 4-ingredient game is under 30).
   */
  maxSteps: z.number().int().positive().default(50),
  /**
   * Ask the engine for the winning commands from the current state after every step (read
   * them with `environment.expertPlan()`). Default false.
   */
  expertPlan: z.boolean().default(false),
});

/** Options of {@link connectTextworldReal}, after defaults. */
export type TextworldRealOptions = z.infer<typeof TextworldRealOptionsSchema>;
/** Options of {@link connectTextworldReal} as a caller writes them (defaults optional). */
export type TextworldRealOptionsInput = z.input<typeof TextworldRealOptionsSchema>;
