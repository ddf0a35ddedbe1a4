#!/usr/bin/env node
// Totals every runner's machine-readable report in a folder (vitest JSON, JUnit XML) and
// prints one line: `N passed, N failed[, N skipped]`. Exits 1 when a test failed or no
// test ran at all.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const folder = process.argv[2] ?? '.test-reports';
const total = { passed: 0, failed: 0, skipped: 0 };
/** Names of the failing tests, printed above the summary so a red run's last lines say which. */
const failures = [];

for (const file of readdirSync(folder)) {
  const text = readFileSync(join(folder, file), 'utf8');
  if (file.endsWith('.json')) {
    const report = JSON.parse(text);
    total.passed += report.numPassedTests;
    total.failed +=
      report.numFailedTests +
      (report.numFailedTestSuites > 0 && report.numFailedTests === 0
        ? report.numFailedTestSuites
        : 0);
    total.skipped += report.numPendingTests + report.numTodoTests;
    for (const suite of report.testResults) {
      const failedTests = suite.assertionResults.filter((test) => test.status === 'failed');
      for (const test of failedTests) failures.push(`${suite.name}: ${test.fullName}`);
      if (suite.status === 'failed' && failedTests.length === 0) {
        failures.push(`${suite.name}: ${(suite.message ?? 'the file failed').split('\n')[0]}`);
      }
    }
  } else if (file.endsWith('.xml')) {
    for (const [, attributes] of text.matchAll(/<testsuite\b([^>]*)>/g)) {
      const count = (name) => Number(new RegExp(`\\b${name}="(\\d+)"`).exec(attributes)?.[1] ?? 0);
      const failed = count('failures') + count('errors');
      total.failed += failed;
      total.skipped += count('skipped');
      total.passed += count('tests') - failed - count('skipped');
    }
    const testcases = /<testcase\b([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g;
    for (const [, attributes, body = ''] of text.matchAll(testcases)) {
      if (!/<(failure|error)\b/.test(body)) continue;
      const attribute = (name) => new RegExp(`\\b${name}="([^"]*)"`).exec(attributes)?.[1] ?? '';
      failures.push(`${attribute('classname')}: ${attribute('name')}`);
    }
  }
}

for (const failure of failures) console.log(`FAILED TEST: ${failure}`);
const skipped = total.skipped > 0 ? `, ${total.skipped} skipped` : '';
console.log(`${total.passed} passed, ${total.failed} failed${skipped}`);
process.exit(total.failed > 0 || total.passed === 0 ? 1 : 0);
