#!/usr/bin/env node
// Totals every runner's machine-readable report in a folder (vitest JSON, JUnit XML) and
// prints one line: `N passed, N failed[, N skipped]`. Exits 1 when a test failed or no
// test ran at all.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const folder = process.argv[2] ?? '.test-reports';
const total = { passed: 0, failed: 0, skipped: 0 };

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
  } else if (file.endsWith('.xml')) {
    for (const [, attributes] of text.matchAll(/<testsuite\b([^>]*)>/g)) {
      const count = (name) => Number(new RegExp(`\\b${name}="(\\d+)"`).exec(attributes)?.[1] ?? 0);
      const failed = count('failures') + count('errors');
      total.failed += failed;
      total.skipped += count('skipped');
      total.passed += count('tests') - failed - count('skipped');
    }
  }
}

const skipped = total.skipped > 0 ? `, ${total.skipped} skipped` : '';
console.log(`${total.passed} passed, ${total.failed} failed${skipped}`);
process.exit(total.failed > 0 || total.passed === 0 ? 1 : 0);
