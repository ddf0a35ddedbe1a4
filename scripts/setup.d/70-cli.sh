# The `dreamgym` command, built, so that `npx dreamgym` works once the set-up is done (the first
# step of docs/adding-a-benchmark.md is `npx dreamgym new adapter`). npm links the bin at
# install (packages/cli/bin/dreamgym.js, a file of the source tree); it runs the built CLI,
# packages/cli/dist/, which this step builds with core and the packages the CLI builds against
# when it is missing. A stale build is left as it is: `npx turbo run build` rebuilds what changed.

after_npm_cli() {
  [ -f packages/cli/dist/bin.js ] && return 0
  log 'building the dreamgym command (npx turbo run build --filter=@dreamgym/cli)'
  TURBO_TELEMETRY_DISABLED=1 npx turbo run build --filter=@dreamgym/cli --output-logs=errors-only || return 1
}
