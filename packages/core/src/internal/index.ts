/**
 * `@dreamgym/core/internal`: helpers shared by the `@dreamgym/*` packages themselves.
 *
 * Not part of the public API. Nothing here carries a compatibility promise: any
 * export may change or disappear in any release, patch releases included, without a
 * changeset. Applications and third-party adapters should not import this entry point;
 * copy what they need instead.
 *
 * @packageDocumentation
 */
export { writeFileAtomic } from '../files/atomic-write.js';
export { extractJson } from '../models/json-extraction.js';
export { Semaphore } from '../models/semaphore.js';
export { LedgerCountersSchema, RunLedger } from '../training/run-ledger.js';
