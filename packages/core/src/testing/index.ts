/**
 * `@dreamgym/core/testing`: the conformance checks every environment, adapter and trainable
 * policy should pass, as plain functions that need no test runner, and a tiny reference
 * domain (the corridor) for tests and examples. `@dreamgym/core/testing/vitest` registers the
 * same checks as vitest suites.
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
  type CorridorPlayOptions,
  corridorTask,
  corridorTasks,
  createCorridorAdapter,
  optimalCorridorAction,
  playCorridor,
} from './corridor-domain.js';
export {
  corridorConformanceSamples,
  type TrainablePolicyConformanceOptions,
  trainablePolicyConformanceChecks,
} from './trainable-policy-conformance.js';
