/**
 * Options of the real WebArena-Lite connector, as a zod schema (the source of truth) with
 * the inferred types.
 */
import {
  type Browser,
  BrowserEnvironmentOptionsSchema,
  type ObservationRefiner,
} from '@dreamgym/browser';
import type { ChatModel } from '@dreamgym/core/models';
import { z } from 'zod';
import { WebarenaSitesSchema } from '../config/sites.js';
import { WebarenaAccountsSchema } from '../evaluation/helper-functions.js';

/** Options of {@link connectWebarenaLiteReal}. */
export const WebarenaRealOptionsSchema = z.object({
  /** Base URLs of the deployed WebArena sites; each task needs the sites its config names. */
  sites: WebarenaSitesSchema.default({}),
  /**
   * Where the login storage states live. A config's `storage_state` (`./.auth/gitlab_state.json`)
   * is read as `<authDirectory>/gitlab_state.json`. Default: the path as the config writes it,
   * from the working directory (WebArena's own layout).
   */
  authDirectory: z.string().min(1).optional(),
  /** Accounts of the evaluation helpers (the shop admin for its REST API). */
  accounts: WebarenaAccountsSchema.optional(),
  /** Browser options (`maxSteps` defaults to 30, WebArena's budget; `viewportOnly`...). */
  browser: BrowserEnvironmentOptionsSchema.partial().optional(),
  /** Milliseconds for an evaluation's page load or REST request. Default 30 000. */
  evaluationTimeoutMs: z.number().int().positive().default(30_000),
});
/** Options of {@link connectWebarenaLiteReal}, as a caller writes them. */
export type WebarenaRealOptionsInput = z.input<typeof WebarenaRealOptionsSchema>;
/** Options of {@link connectWebarenaLiteReal}, after defaults. */
export type WebarenaRealOptions = z.output<typeof WebarenaRealOptionsSchema>;

/** The connector's options plus the parts that are not data. */
export interface WebarenaRealSetup extends WebarenaRealOptionsInput {
  /** LLM judge of `fuzzy_match` checks; without it they are reported as not evaluated. */
  judge?: ChatModel;
  /** An optional LLM refinement of each observation (ids kept). */
  refiner?: ObservationRefiner;
  /** A browser to share instead of launching one (the environment then closes only its contexts). */
  sharedBrowser?: Browser;
  /**
   * The tokenizer of the model that reads the observations (the policy's or the experience
   * model's, e.g. `LlamaChatModel.countTokens`): `browser.maxObservationTokens` is counted in
   * its tokens. Default: the browser's conservative estimate.
   */
  countTokens?: (text: string) => number;
}
