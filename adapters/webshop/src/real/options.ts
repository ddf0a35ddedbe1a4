/**
 * Options of the real WebShop connector, as a zod schema (the source of truth) with the
 * inferred type.
 */
import { z } from 'zod';

/** Options of {@link connectWebshopReal}. */
export const WebshopRealOptionsSchema = z.object({
  /**
   * URL of a running WebShop environment server speaking the AgentGym WebShop protocol
   * (AgentGym's `agentenv-webshop`, `webshop --port 36001`), e.g. `http://127.0.0.1:36001`.
   * Defaults to `$DREAMGYM_WEBSHOP_URL`. Required: the WebShop catalogue and its search
   * engine are not bundled with this package.
   */
  url: z.url().optional(),
  /** Milliseconds before one HTTP request is abandoned. Default 30 000 (a search on the full catalogue can take seconds). */
  requestTimeoutMs: z.number().int().positive().default(30_000),
  /**
   * Extra attempts of a request that failed without an answer or with HTTP 502/503/504.
   * `POST /step` is retried only when the connection was refused (the server never saw
   * it): a click must not happen twice. Default 2.
   */
  retries: z.number().int().nonnegative().default(2),
  /** Milliseconds before the first retry; doubles, with jitter, on each further one. Default 250. */
  retryDelayMs: z.number().int().nonnegative().default(250),
  /** Actions after which the episode ends with `done` and `truncated`. Default 30. */
  maxSteps: z.number().int().positive().default(30),
  /** The server's observation mode (AgentGym's server uses `text`). Default `text`. */
  observationMode: z.enum(['text', 'text_rich', 'html']).default('text'),
  /**
   * After `reset`, check that the server's instruction is the task's (ignoring the price
   * clause): a server whose goal order differs from `human_goals.json` (AgentGym's fork
   * lists several price variants per instruction) would otherwise play other goals
   * silently. Set `task.meta.sessionId` to name the server's goal index directly. Default true.
   */
  checkInstruction: z.boolean().default(true),
  /**
   * `success` (default): reward 1 when the purchase scores 1, else 0 (the paper's outcome
   * reward; `info.score` keeps the score). `score`: WebShop's purchase score itself.
   */
  reward: z.enum(['success', 'score']).default('success'),
});

/** Options of {@link connectWebshopReal}, after defaults. */
export type WebshopRealOptions = z.infer<typeof WebshopRealOptionsSchema>;
/** Options of {@link connectWebshopReal} as a caller writes them. */
export type WebshopRealOptionsInput = z.input<typeof WebshopRealOptionsSchema>;
