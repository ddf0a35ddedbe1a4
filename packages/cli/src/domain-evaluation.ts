/**
 * Evaluating a policy on a set-up domain: its real environment, or the synthetic one of its
 * embedded experience model.
 */
import {
  type EvaluationMetrics,
  type ExperienceModel,
  evaluatePolicy,
  type Policy,
  type SeededRandom,
  SyntheticEnvironment,
  type Task,
} from '@dreamgym/core';
import type { DomainSetup } from './domain-setup.js';

/** Evaluates `policy` on the domain's real environment or its synthetic one. */
export function evaluateOnDomain(
  domain: DomainSetup,
  options: {
    policy: Policy;
    environment: 'real' | 'synthetic';
    tasks: readonly Task[];
    maxSteps: number;
    k: number;
    greedy: boolean;
    concurrency: number;
    random: SeededRandom;
    episodesPerTask?: number;
    /** The synthetic environment's experience model; default the domain's embedded one. */
    experienceModel?: ExperienceModel;
  },
): Promise<EvaluationMetrics> {
  const { environment, k, experienceModel = domain.experienceModel, ...rest } = options;
  return evaluatePolicy({
    ...rest,
    environment,
    environmentFactory:
      environment === 'real'
        ? domain.realEnvironment
        : () =>
            new SyntheticEnvironment({
              model: experienceModel,
              retriever: domain.replayBuffer,
              adapter: domain.adapter,
              k,
              maxSteps: options.maxSteps,
            }),
    candidateActions: (observation, history) =>
      domain.adapter.candidateActions(observation, history),
  }).then((evaluation) => evaluation.metrics);
}
