/**
 * Evaluating a policy on a set-up domain: its real environment, or the synthetic one of its
 * embedded experience model.
 */
import {
  type DreamGymConfig,
  type EvaluationMetrics,
  type ExperienceModel,
  evaluatePolicy,
  type Policy,
  type SeededRandom,
  syntheticEnvironmentFromConfig,
  type Task,
} from '@dreamgym/core';
import { type DomainSetup, type ProgressOutput, reportEpisodes } from '@dreamgym/run';

/** Evaluates `policy` on the domain's real environment or its synthetic one. */
export function evaluateOnDomain(
  domain: DomainSetup,
  options: {
    policy: Policy;
    environment: 'real' | 'synthetic';
    tasks: readonly Task[];
    maxSteps: number;
    /** The run's configuration: the synthetic environment is the one the run trained in. */
    config: DreamGymConfig;
    greedy: boolean;
    concurrency: number;
    random: SeededRandom;
    episodesPerTask?: number;
    /** The synthetic environment's experience model; default the domain's embedded one. */
    experienceModel?: ExperienceModel;
    /** Where to show the episodes' progress (a bar on a terminal, a line per tenth otherwise). */
    progress?: { label: string; output: ProgressOutput };
  },
): Promise<EvaluationMetrics> {
  const {
    environment,
    config,
    experienceModel = domain.experienceModel,
    progress,
    ...rest
  } = options;
  return evaluatePolicy({
    ...rest,
    ...(progress ? { onEpisode: reportEpisodes(progress.label, progress.output) } : {}),
    environment,
    environmentFactory:
      environment === 'real'
        ? domain.realEnvironment
        : () =>
            syntheticEnvironmentFromConfig(
              { ...config, maxSteps: options.maxSteps },
              { experienceModel, retriever: domain.replayBuffer, adapter: domain.adapter },
            ),
    candidateActions: (observation, history) =>
      domain.adapter.candidateActions(observation, history),
  }).then((evaluation) => evaluation.metrics);
}
