/**
 * The one mapping from a DreamGym configuration to the synthetic environment it trains in:
 * the loop, `dreamgym serve`, `dreamgym eval` and the benchmarks all build their synthetic
 * environments here, so a setting (retrieval, history, step limit, invalid-action penalty)
 * means the same thing everywhere.
 */
import type { DomainAdapter } from '../adapter.js';
import type { ExperienceModel } from '../experience/experience-model.js';
import { SyntheticEnvironment } from '../experience/synthetic-environment.js';
import type { TransitionRetriever } from '../replay/retriever.js';
import {
  type DreamGymConfig,
  type DreamGymConfigInput,
  parseDreamGymConfig,
} from './dreamgym-config.js';

/** What a synthetic environment is built from besides the configuration. */
export interface SyntheticEnvironmentParts {
  /** M_exp. */
  experienceModel: ExperienceModel;
  /** The replay buffer the demonstrations are retrieved from. */
  retriever: TransitionRetriever;
  /** The domain. */
  adapter: Pick<DomainAdapter, 'name' | 'parseAction' | 'candidateActions'>;
}

/**
 * The synthetic environment `config` describes: `retrieval.k` demonstrations per step (none
 * when `retrieval.enabled` is false), the episode's history unless `history.enabled` is
 * false, `maxSteps`, `invalidActionPenalty`; retrieval is restricted to the adapter's domain, as
 * every `SyntheticEnvironment`'s is.
 */
export function syntheticEnvironmentFromConfig(
  config: DreamGymConfig | DreamGymConfigInput,
  parts: SyntheticEnvironmentParts,
): SyntheticEnvironment {
  const parsed = parseDreamGymConfig(config);
  return new SyntheticEnvironment({
    model: parts.experienceModel,
    retriever: parts.retriever,
    adapter: parts.adapter,
    k: parsed.retrieval.enabled ? parsed.retrieval.k : 0,
    useHistory: parsed.history.enabled,
    maxSteps: parsed.maxSteps,
    invalidActionPenalty: parsed.invalidActionPenalty,
  });
}
