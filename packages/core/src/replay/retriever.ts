/**
 * The retrieval contract the experience model relies on: top-k stored transitions most
 * similar to the current (s_t, a_t) by cosine of phi(s, a). `ReplayBuffer` implements it.
 */
import type { ExperienceSource, Observation, Transition } from '../mdp/schemas.js';

/** What to look up: the current state and action (and, optionally, the task instruction). */
export interface RetrievalQuery {
  state: Observation;
  action: string;
  /** Task instruction; included in phi when the buffer embeds instructions. */
  instruction?: string;
}

/** Restricts which transitions can be returned. */
export interface RetrievalFilter {
  domain?: string;
  sources?: readonly ExperienceSource[];
  taskIds?: readonly string[];
  /** Leave out transitions of these trajectories (e.g. the episode being simulated). */
  excludeTrajectoryIds?: readonly string[];
}

/** A retrieved transition and its cosine similarity to the query, in [-1, 1]. */
export interface ScoredTransition {
  transition: Transition;
  score: number;
  /**
   * Times this transition occurred: the buffer stores exact duplicates (same domain, state,
   * action and next state) once and counts them. Absent means 1 (retrievers that keep no
   * counts).
   */
  count?: number;
}

export interface TransitionRetriever {
  /** The `k` most similar transitions passing `filter`, most similar first. */
  search(query: RetrievalQuery, k: number, filter?: RetrievalFilter): Promise<ScoredTransition[]>;
}
