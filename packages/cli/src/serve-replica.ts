/**
 * The replica module of `dreamgym serve --workers N`: each worker process of
 * `@dreamgym/server` imports it and calls `createReplica` to build what it serves from,
 * with the same domain settings as the serving process (adapter, offline transitions in a
 * replay buffer, the embedded experience model with its outcome judge).
 */
import { type DomainSetupOptions, setUpDomain } from '@dreamgym/run';

/** What `dreamgym serve` hands each worker. */
export interface ServeReplicaOptions {
  /** The domain set-up of the run (the serving process's, with its index settings). */
  setup: DomainSetupOptions;
}

/** Builds one worker's replica: the domain set up as `dreamgym serve` sets it up. */
export async function createReplica(options: ServeReplicaOptions) {
  const domain = await setUpDomain(options.setup, (message) =>
    process.stderr.write(`dreamgym serve worker ${process.pid}: ${message}\n`),
  );
  // The embedded model as `createExperienceModel` builds it, the serving process's without workers.
  return {
    adapter: domain.adapter,
    replayBuffer: domain.replayBuffer,
    experienceModel: domain.experienceModel,
  };
}
