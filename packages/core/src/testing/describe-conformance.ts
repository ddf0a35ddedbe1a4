import { describe, it } from 'vitest';
import {
  type AdapterConformanceOptions,
  adapterConformanceChecks,
  type ConformanceCheck,
  type EnvironmentConformanceOptions,
  environmentConformanceChecks,
} from './conformance.js';
import {
  type TrainablePolicyConformanceOptions,
  trainablePolicyConformanceChecks,
} from './trainable-policy-conformance.js';

/** Options for the vitest wrappers. */
export interface DescribeConformanceOptions {
  /** Per-check timeout in milliseconds (real environments can be slow). Default 30 000. */
  timeout?: number;
  /**
   * Why the checks cannot run on this machine (the real environment's engine is not
   * installed), or undefined to run them. With a reason, every check is reported skipped with
   * it as its note: where the engine is, the checks run, so check for what the environment
   * needs, not whether it works.
   */
  skip?: string;
}

function describeChecks(
  title: string,
  checks: ConformanceCheck[],
  options: DescribeConformanceOptions,
) {
  const { skip } = options;
  // The checks of one suite share state (a policy) and must run in order.
  describe.sequential(title, () => {
    for (const check of checks) {
      it(
        check.name,
        (context) => (skip === undefined ? check.run() : context.skip(skip)),
        options.timeout ?? 30_000,
      );
    }
  });
}

/**
 * Registers the `Environment` contract as a vitest suite. Call it at the top level of an
 * adapter's test file.
 *
 * @example
 * describeEnvironmentConformance('alfworld real engine', {
 *   createEnvironment: () => adapter.connectReal({ dataDir }),
 *   tasks: [task],
 * });
 * // Where the engine may be absent: skipped, saying why, when it is.
 * describeEnvironmentConformance('acme real engine', options, {
 *   skip: existsSync(engine) ? undefined : `no ACME engine at ${engine}: run its set-up`,
 * });
 */
export function describeEnvironmentConformance(
  title: string,
  options: EnvironmentConformanceOptions,
  describeOptions: DescribeConformanceOptions = {},
): void {
  describeChecks(
    `Environment conformance: ${title}`,
    environmentConformanceChecks(options),
    describeOptions,
  );
}

/** Registers the `DomainAdapter` contract as a vitest suite. */
export function describeAdapterConformance(
  title: string,
  options: AdapterConformanceOptions,
  describeOptions: DescribeConformanceOptions = {},
): void {
  describeChecks(
    `DomainAdapter conformance: ${title}`,
    adapterConformanceChecks(options),
    describeOptions,
  );
}

/**
 * Registers the `TrainablePolicy` contract as a vitest suite (its checks share one policy
 * and run in order).
 *
 * @example
 * describeTrainablePolicyConformance('linear softmax', {
 *   createPolicy: async () => new LinearSoftmaxPolicy({ random: new SeededRandom(1) }),
 * });
 */
export function describeTrainablePolicyConformance(
  title: string,
  options: TrainablePolicyConformanceOptions,
  describeOptions: DescribeConformanceOptions = {},
): void {
  describeChecks(
    `TrainablePolicy conformance: ${title}`,
    trainablePolicyConformanceChecks(options),
    describeOptions,
  );
}
