/**
 * `@dreamgym/core/testing`: the conformance suite every environment and adapter runs,
 * and a tiny reference domain for tests and examples.
 */
export {
  type AdapterConformanceOptions,
  adapterConformanceChecks,
  type ConformanceCheck,
  ConformanceFailure,
  type EnvironmentConformanceOptions,
  environmentConformanceChecks,
  type MalformedDatasetCase,
} from './conformance.js';
export {
  CorridorEnvironment,
  type CorridorEnvironmentOptions,
  corridorTask,
  createCorridorAdapter,
} from './corridor-domain.js';
export {
  type DescribeConformanceOptions,
  describeAdapterConformance,
  describeEnvironmentConformance,
} from './describe-conformance.js';
