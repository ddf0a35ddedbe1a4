/**
 * The features `LinearSoftmaxPolicy` scores each candidate action by, as hashed indices of
 * its weight vector: the `lexical` set (the instruction's, the state's and the recent
 * actions' tokens paired with the action's, and the action itself), the `relational` set
 * (`relational-features.ts`, with the instruction x action token pairs) or both; cached per
 * decision, shared by a policy and its snapshots.
 */
import { createHash } from 'node:crypto';
import { ConfigError } from '../errors.js';
import type { Observation, Task } from '../mdp/schemas.js';
import {
  combineHashes,
  FeatureNamespace,
  hashText,
  hashTokens,
  tokenize,
} from './hashed-features.js';
import { RelationalDecision } from './relational-features.js';

/** The feature sets of `LinearSoftmaxPolicyOptions.features`. */
export type PolicyFeatureSet = 'lexical' | 'relational' | 'lexical+relational';

/** Every feature set, in the order errors list them. */
export const FEATURE_SETS: readonly PolicyFeatureSet[] = [
  'lexical',
  'relational',
  'lexical+relational',
];

/** Token hashes and feature lists already built. */
class FeatureCache {
  private readonly tokens = new Map<string, Uint32Array>();
  private readonly decisions = new Map<string, Int32Array>();
  constructor(private readonly limit: number) {}

  tokenHashes(text: string, namespace: number): Uint32Array {
    const key = `${namespace}\u0001${text}`;
    let hashes = this.tokens.get(key);
    if (!hashes) {
      if (this.tokens.size >= this.limit) this.tokens.clear();
      hashes = hashTokens(tokenize(text), namespace);
      this.tokens.set(key, hashes);
    }
    return hashes;
  }

  features(key: string, build: () => Int32Array): Int32Array {
    let features = this.decisions.get(key);
    if (!features) {
      // Clearing wholesale keeps the cache O(1) per lookup; rebuilding is cheap.
      if (this.decisions.size >= this.limit) this.decisions.clear();
      features = build();
      this.decisions.set(key, features);
    }
    return features;
  }
}

/** Builds (and caches) the feature lists of a policy's candidate actions. */
export class CandidateFeatures {
  private readonly cache: FeatureCache;
  private readonly mask: number;

  constructor(
    readonly features: PolicyFeatureSet,
    hashBits: number,
    private readonly historyWindow: number,
    cacheSize: number,
    private readonly policyId: string,
  ) {
    this.cache = new FeatureCache(cacheSize);
    this.mask = (1 << hashBits) - 1;
  }

  /**
   * Feature lists of every candidate, cached per (task, state, recent actions, action), and
   * with relational features per (task, state, whole episode so far, action).
   */
  of(
    task: Task,
    observation: Observation,
    previousActions: readonly string[],
    previousObservations: readonly string[] | undefined,
    candidates: readonly string[],
  ): Int32Array[] {
    if (candidates.length === 0) {
      throw new ConfigError(
        `No candidate actions at a step of task ${task.id}: the observation lists no actions and no candidates were given. Pass the adapter's candidateActions to the rollout collector.`,
        { field: 'candidates' },
      );
    }
    const recent = previousActions.slice(Math.max(0, previousActions.length - this.historyWindow));
    if (this.features === 'lexical') {
      const prefix = `${task.instruction}\u0001${observation.text}\u0001${recent.join('\u0002')}\u0001`;
      const features = candidates.map((action) =>
        this.cache.features(prefix + action, () =>
          this.lexicalFeatures(task.instruction, observation.text, recent, action),
        ),
      );
      return features;
    }
    if (
      previousObservations === undefined ||
      previousObservations.length !== previousActions.length
    ) {
      throw new ConfigError(
        `The ${this.features} features of policy ${this.policyId} relate actions to the episode's earlier observations; a sample of task ${task.id} has ${previousActions.length} previous actions and ${previousObservations?.length ?? 'no'} previous observations. Build samples with rolloutSamples/demonstrationSamples, which fill previousObservations.`,
        { field: 'previousObservations' },
      );
    }
    // The whole episode is the key; a digest keeps the cache's keys short.
    const digest = createHash('sha1');
    digest.update(task.instruction);
    for (let index = 0; index < previousActions.length; index += 1) {
      digest.update(`\u0001${previousObservations[index]}\u0002${previousActions[index]}`);
    }
    digest.update(`\u0001${observation.text}\u0003`);
    const prefix = digest.digest('base64');
    let decision: RelationalDecision | undefined;
    const features = candidates.map((action) =>
      this.cache.features(prefix + action, () => {
        decision ??= new RelationalDecision({
          instruction: task.instruction,
          observation: observation.text,
          previousActions,
          previousObservations,
        });
        const relational = decision.features(action, this.mask);
        if (this.features === 'relational') {
          return Int32Array.from([
            ...this.taskActionFeatures(task.instruction, action),
            ...relational,
          ]);
        }
        const lexical = this.lexicalFeatures(task.instruction, observation.text, recent, action);
        return Int32Array.from([...lexical, ...relational]);
      }),
    );
    return features;
  }

  /** (instruction token x action token) pairs: words, not the world's places and objects. */
  private taskActionFeatures(instruction: string, action: string): number[] {
    const taskTokens = this.cache.tokenHashes(instruction, FeatureNamespace.taskAction);
    const actionTokens = this.cache.tokenHashes(action, FeatureNamespace.actionToken);
    const out: number[] = [];
    for (const actionToken of actionTokens) {
      for (const token of taskTokens) out.push(combineHashes(token, actionToken) & this.mask);
    }
    return out;
  }

  private lexicalFeatures(
    instruction: string,
    state: string,
    recent: readonly string[],
    action: string,
  ): Int32Array {
    const taskTokens = this.cache.tokenHashes(instruction, FeatureNamespace.taskAction);
    const stateTokens = this.cache.tokenHashes(state, FeatureNamespace.stateAction);
    const actionTokens = this.cache.tokenHashes(action, FeatureNamespace.actionToken);
    const actionHash = hashText(action.trim().toLowerCase(), FeatureNamespace.action);
    const out: number[] = [actionHash & this.mask];
    for (const token of actionTokens) out.push(token & this.mask);
    for (const actionToken of actionTokens) {
      for (const token of taskTokens) out.push(combineHashes(token, actionToken) & this.mask);
      for (const token of stateTokens) out.push(combineHashes(token, actionToken) & this.mask);
    }
    for (let position = 0; position < recent.length; position += 1) {
      // Distance from now matters: "took the key last step" differs from "two steps ago".
      const previous = hashText(
        `${recent.length - position}\u0001${recent[position]!.trim().toLowerCase()}`,
        FeatureNamespace.historyAction,
      );
      out.push(combineHashes(previous, actionHash) & this.mask);
    }
    return Int32Array.from(out);
  }
}
