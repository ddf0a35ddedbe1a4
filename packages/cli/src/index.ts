/**
 * `@dreamgym/cli`: the `dreamgym` command. The parts a run is assembled from (a domain's
 * set-up, the experience model, the policy, the run folder's `run.json`, progress and
 * reports) are `@dreamgym/run`, for programs that build runs without the command line.
 */

export { runCli } from './cli.js';
