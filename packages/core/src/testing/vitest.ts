/**
 * `@dreamgym/core/testing/vitest`: the conformance checks of `@dreamgym/core/testing`
 * registered as vitest suites (`describeEnvironmentConformance(name, options)` in a test
 * file). The one entry of `@dreamgym/core` that imports vitest.
 */
export {
  type DescribeConformanceOptions,
  describeAdapterConformance,
  describeEnvironmentConformance,
  describeTrainablePolicyConformance,
} from './describe-conformance.js';
