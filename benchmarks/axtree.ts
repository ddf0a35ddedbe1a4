/**
 * AX-tree state-mapping benchmark: per page, side by side in one run on the same Chromium
 * binary (Debian's /usr/bin/chromium, the same flags), the observation of `@dreamgym/browser`
 * against the raw accessibility tree and against BrowserGym's flattened tree
 * (`browsergym-core` from PyPI, driven from Python by
 * packages/browser/python/dreamgym_browsergym_bench).
 *
 * Per page:
 * - tokens (SmolLM2's tokenizer, the embedded model's) of our observation (tab header, URL
 *   line and tree), of the raw tree (every node Chromium's `Accessibility.getFullAXTree`
 *   returns for every frame, printed one line each with all its properties, no pruning), of
 *   the raw tree as CDP's JSON, and of BrowserGym's `flatten_axtree_to_str` output;
 * - milliseconds, median of `--repeats` observations of the loaded page: ours end to end
 *   (CDP capture of every frame, flattening, formatting) and BrowserGym's whole observation
 *   pipeline (DOM marking, DOM snapshot, merged AX tree, focused element, extra properties,
 *   flattening, unmarking), each timed in its own process;
 * - actionable elements kept: every rendered element that takes a click (a click listener or
 *   a link, per Chromium's DOMSnapshot `isClickable`, the page's <html> and <body> aside) or
 *   input (input, textarea, select, contenteditable), counted as kept when its node has an
 *   element id in our observation; a <label> counts as kept when the control it labels is.
 *
 * Pages: the pages written for the browser tests, MiniWoB++ tasks started with a seed, and
 * the saved airline sites shipped with MiniWoB++ (large real-world pages).
 *
 * Run: `npm run axtree -w dreamgym-benchmarks` after `npm run build` (needs the project
 * virtualenv with packages/browser/python/requirements.txt: `bash scripts/setup.sh`).
 * Options: `--repeats N` (default 5). Writes benchmarks/results/axtree.json.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { cpus, homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  defaultMiniwobPython,
  launchChromium,
  type ObservedElement,
  type Page,
  PageObserver,
  type PageSessions,
  type RawAccessibilitySnapshot,
  type RawAxNode,
  serveDirectory,
  startMiniwobEpisode,
  startMiniwobServer,
} from '@dreamgym/browser';
import { getLlama } from 'node-llama-cpp';

const here = dirname(fileURLToPath(import.meta.url));
const repository = resolve(here, '..');
const args = process.argv.slice(2);
const option = (name: string, fallback: string): string => {
  const index = args.indexOf(`--${name}`);
  return index >= 0 && args[index + 1] !== undefined ? args[index + 1]! : fallback;
};
const REPEATS = Number(option('repeats', '5'));

interface PageSpec {
  name: string;
  kind: 'test page' | 'miniwob' | 'saved site';
  path: string;
  seed?: number;
}

const TEST_PAGES = ['form', 'frames', 'shadow', 'hidden', 'dynamic', 'links'].map(
  (name): PageSpec => ({ name: `test/${name}`, kind: 'test page', path: `${name}.html` }),
);
const MINIWOB_TASKS = [
  'click-test',
  'click-checkboxes',
  'enter-text',
  'choose-list',
  'click-tab',
  'click-collapsible',
  'login-user',
  'book-flight',
  'social-media',
  'email-inbox',
  'search-engine',
  'navigate-tree',
  'use-autocomplete',
  'click-pie',
].map(
  (task): PageSpec => ({
    name: `miniwob/${task}`,
    kind: 'miniwob',
    path: `miniwob/${task}.html`,
    seed: 7,
  }),
);
const SAVED_SITES = ['AA', 'Alaska'].map(
  (site): PageSpec => ({
    name: `flight/${site}`,
    kind: 'saved site',
    path: `flight/${site}/original.html`,
  }),
);

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const round = (value: number, digits = 1) => Number(value.toFixed(digits));

/** The raw tree as text: every node of every frame, depth-first, with all its properties. */
function rawTreeText(snapshot: RawAccessibilitySnapshot): string {
  const lines: string[] = [];
  for (const frame of snapshot.frames) {
    const byId = new Map(frame.nodes.map((node) => [node.nodeId, node]));
    const seen = new Set<string>();
    const print = (node: RawAxNode, depth: number) => {
      if (seen.has(node.nodeId)) return;
      seen.add(node.nodeId);
      const properties = (node.properties ?? []).map(
        (property) => `${property.name}: ${JSON.stringify(property.value?.value)}`,
      );
      if (node.value?.value !== undefined)
        properties.unshift(`value: ${JSON.stringify(node.value.value)}`);
      if (node.ignored) properties.unshift('ignored: true');
      lines.push(
        `${'\t'.repeat(depth)}[${node.nodeId}] ${String(node.role?.value ?? '')} '${String(node.name?.value ?? '')}'${properties.length ? ` ${properties.join(', ')}` : ''}`,
      );
      for (const child of node.childIds ?? []) {
        const next = byId.get(child);
        if (next) print(next, depth + 1);
      }
    };
    for (const node of frame.nodes) print(node, 0);
  }
  return lines.join('\n');
}

interface DomSnapshot {
  documents: {
    frameId: number;
    nodes: {
      backendNodeId: number[];
      nodeName: number[];
      attributes: number[][];
      isClickable?: { index: number[] };
    };
    layout: { nodeIndex: number[]; bounds: number[][]; styles: number[][] };
  }[];
  strings: string[];
}

/** Rendered elements that take a click or input, by `frameId|backendNodeId`, with a label's control. */
async function actionableElements(
  sessions: Awaited<ReturnType<PageSessions['all']>>,
): Promise<Map<string, { name: string; label?: string }>> {
  const found = new Map<string, { name: string; label?: string }>();
  for (const session of sessions) {
    const snapshot = (await session.send('DOMSnapshot.captureSnapshot', {
      computedStyles: ['visibility'],
    })) as DomSnapshot;
    for (const document of snapshot.documents) {
      const frameId = snapshot.strings[document.frameId]!;
      const { nodes } = document;
      const clickable = new Set(nodes.isClickable?.index ?? []);
      const rendered = new Set<number>();
      document.layout.nodeIndex.forEach((nodeIndex, layoutIndex) => {
        const [, , width = 0, height = 0] = document.layout.bounds[layoutIndex] ?? [];
        const visibility = snapshot.strings[document.layout.styles[layoutIndex]?.[0] ?? -1];
        if (width > 0 && height > 0 && visibility !== 'hidden') rendered.add(nodeIndex);
      });
      for (let index = 0; index < nodes.backendNodeId.length; index += 1) {
        if (!rendered.has(index)) continue;
        const name = snapshot.strings[nodes.nodeName[index]!]!;
        if (name === 'HTML' || name === 'BODY' || name.startsWith('#')) continue;
        const attributes = nodes.attributes[index] ?? [];
        const attribute = (key: string) => {
          for (let at = 0; at < attributes.length; at += 2) {
            if (snapshot.strings[attributes[at]!] === key)
              return snapshot.strings[attributes[at + 1]!];
          }
          return undefined;
        };
        const takesInput =
          (name === 'INPUT' && attribute('type') !== 'hidden') ||
          name === 'TEXTAREA' ||
          name === 'SELECT' ||
          (attribute('contenteditable') !== undefined && attribute('contenteditable') !== 'false');
        if (!clickable.has(index) && !takesInput) continue;
        const backendNodeId = nodes.backendNodeId[index]!;
        const entry: { name: string; label?: string } = { name };
        if (name === 'LABEL') {
          // A label's click goes to its control: the label is represented by that control.
          try {
            const { object } = await session.send('DOM.resolveNode', { backendNodeId });
            const control = await session.send('Runtime.callFunctionOn', {
              objectId: object.objectId!,
              functionDeclaration: 'function () { return this.control; }',
            });
            if (control.result.objectId) {
              const described = await session.send('DOM.describeNode', {
                objectId: control.result.objectId,
              });
              entry.label = `${frameId}|${described.node.backendNodeId}`;
            }
          } catch {
            // a label without a control stays an element of its own
          }
        }
        found.set(`${frameId}|${backendNodeId}`, entry);
      }
    }
  }
  return found;
}

/** BrowserGym's side: a Python process answering one page per request. */
async function startBrowserGym() {
  const python = defaultMiniwobPython();
  const child = spawn(python, ['-m', 'dreamgym_browsergym_bench'], {
    cwd: join(repository, 'packages', 'browser', 'python'),
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async () => {
    const { value, done } = await lines.next();
    if (done) throw new Error('The BrowserGym process ended early (see its output above).');
    return JSON.parse(value) as Record<string, unknown>;
  };
  const ready = await next();
  return {
    version: String(ready.version),
    async observe(url: string, seed: number | undefined) {
      child.stdin!.write(
        `${JSON.stringify({ url, repeats: REPEATS, miniwob_seed: seed ?? null })}\n`,
      );
      const answer = await next();
      if (answer.error) throw new Error(`BrowserGym failed on ${url}: ${answer.error}`);
      return answer as { text: string; ms: number[]; nodes: number };
    },
    async close() {
      child.stdin!.end('\n');
      await new Promise((done) => child.once('exit', done));
    },
  };
}

async function main() {
  const modelPath = join(
    homedir(),
    '.cache',
    'dreamgym',
    'models',
    'smollm2-135m-instruct',
    'SmolLM2-135M-Instruct.Q4_1.gguf',
  );
  if (!existsSync(modelPath))
    throw new Error(
      `${modelPath} is missing: run bash scripts/setup.sh (it installs the embedded model, whose tokenizer counts tokens here).`,
    );
  const llama = await getLlama({ gpu: false, build: 'never' });
  const model = await llama.loadModel({ modelPath, vocabOnly: true });
  const tokens = (text: string) => model.tokenize(text).length;

  const testPages = await serveDirectory(
    join(repository, 'packages', 'browser', 'src', '__fixtures__', 'pages'),
  );
  const miniwob = await startMiniwobServer();
  const [browser, browsergym] = await Promise.all([launchChromium(), startBrowserGym()]);
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
  const pages: Record<string, unknown>[] = [];
  try {
    const specs = [...TEST_PAGES, ...MINIWOB_TASKS, ...SAVED_SITES];
    for (const [index, spec] of specs.entries()) {
      const url = `${spec.kind === 'test page' ? testPages.url : miniwob.url}${spec.path}`;
      // Alternate who goes first, so that neither side always meets a warmer machine.
      const runOurs = async () => {
        const page: Page = await context.newPage();
        try {
          await page.goto(url, { waitUntil: 'load' });
          if (spec.seed !== undefined)
            await startMiniwobEpisode(page, { seed: spec.seed, timeLimitMs: 600_000 });
          await page.waitForTimeout(300);
          const observer = new PageObserver({ keepSnapshot: true });
          const timings: number[] = [];
          let observation = await observer.observe(page);
          for (let repeat = 0; repeat < REPEATS; repeat += 1) {
            const started = performance.now();
            observation = await observer.observe(page);
            timings.push(performance.now() - started);
          }
          const actionable = await actionableElements(await observer.sessionsOf(page).all());
          return { observation, timings, actionable };
        } finally {
          await page.close();
        }
      };
      const runTheirs = () => browsergym.observe(url, spec.seed);
      let ours: Awaited<ReturnType<typeof runOurs>>;
      let theirs: Awaited<ReturnType<typeof runTheirs>>;
      if (index % 2 === 0) {
        ours = await runOurs();
        theirs = await runTheirs();
      } else {
        theirs = await runTheirs();
        ours = await runOurs();
      }
      const { observation, timings, actionable } = ours;
      const snapshot = observation.snapshot!;
      const keptIds = new Set(
        [...observation.elements.values()].map(
          (element: ObservedElement) => `${element.frameId}|${element.backendNodeId}`,
        ),
      );
      const missing: string[] = [];
      let kept = 0;
      for (const [key, element] of actionable) {
        if (keptIds.has(key) || (element.label !== undefined && keptIds.has(element.label)))
          kept += 1;
        else missing.push(element.name);
      }
      const raw = rawTreeText(snapshot);
      const rawJson = JSON.stringify(snapshot.frames.map((frame) => frame.nodes));
      const result = {
        name: spec.name,
        kind: spec.kind,
        ours: {
          tokens: tokens(observation.text),
          ms: round(median(timings), 2),
          chars: observation.text.length,
          lines: observation.tree.split('\n').length,
          elements: observation.elements.size,
        },
        raw: {
          tokens: tokens(raw),
          jsonTokens: tokens(rawJson),
          nodes: snapshot.frames.reduce((sum, frame) => sum + frame.nodes.length, 0),
          frames: snapshot.frames.length,
        },
        browsergym: {
          tokens: tokens(theirs.text),
          ms: round(median(theirs.ms), 2),
          chars: theirs.text.length,
        },
        actionableKept: kept,
        actionableTotal: actionable.size,
        ...(missing.length > 0 ? { actionableMissing: missing } : {}),
      };
      pages.push(result);
      const ratio = (result.raw.tokens / result.ours.tokens).toFixed(1);
      process.stderr.write(
        `[${index + 1}/${specs.length}] ${spec.name.padEnd(26)} tokens ours ${String(result.ours.tokens).padStart(6)}  raw ${String(result.raw.tokens).padStart(7)} (${ratio}x)  browsergym ${String(result.browsergym.tokens).padStart(6)}   ms ours ${String(result.ours.ms).padStart(7)}  browsergym ${String(result.browsergym.ms).padStart(7)}   actionable ${kept}/${actionable.size}\n`,
      );
    }
  } finally {
    await context.close();
    await browser.close();
    await browsergym.close();
    await testPages.close();
    await miniwob.close();
  }

  type PageResult = {
    ours: { tokens: number; ms: number };
    raw: { tokens: number; jsonTokens: number };
    browsergym: { tokens: number; ms: number };
    actionableKept: number;
    actionableTotal: number;
  };
  const results = pages as unknown as PageResult[];
  const sum = (pick: (page: PageResult) => number) =>
    results.reduce((total, page) => total + pick(page), 0);
  const rawRatios = results.map((page) => page.raw.tokens / page.ours.tokens);
  const rawJsonRatios = results.map((page) => page.raw.jsonTokens / page.ours.tokens);
  const summary = {
    pages: results.length,
    tokens: {
      ours: sum((page) => page.ours.tokens),
      raw: sum((page) => page.raw.tokens),
      rawJson: sum((page) => page.raw.jsonTokens),
      browsergym: sum((page) => page.browsergym.tokens),
    },
    rawOverOurs: {
      min: round(Math.min(...rawRatios), 2),
      median: round(median(rawRatios), 2),
      total: round(sum((page) => page.raw.tokens) / sum((page) => page.ours.tokens), 2),
      pagesUnder5x: results
        .filter((_, index) => rawRatios[index]! < 5)
        .map((page) => (page as unknown as { name: string }).name),
    },
    rawJsonOverOurs: {
      min: round(Math.min(...rawJsonRatios), 2),
      median: round(median(rawJsonRatios), 2),
      total: round(sum((page) => page.raw.jsonTokens) / sum((page) => page.ours.tokens), 2),
    },
    browsergymOverOurs: {
      total: round(sum((page) => page.browsergym.tokens) / sum((page) => page.ours.tokens), 3),
      pagesWhereOursHasMore: results.filter((page) => page.ours.tokens > page.browsergym.tokens)
        .length,
    },
    ms: {
      ours: round(
        sum((page) => page.ours.ms),
        1,
      ),
      browsergym: round(
        sum((page) => page.browsergym.ms),
        1,
      ),
      speedup: round(sum((page) => page.browsergym.ms) / sum((page) => page.ours.ms), 2),
      pagesWhereOursIsSlower: results.filter((page) => page.ours.ms > page.browsergym.ms).length,
    },
    actionable: {
      kept: sum((page) => page.actionableKept),
      total: sum((page) => page.actionableTotal),
    },
  };
  const targets = {
    'at least 5x fewer tokens than the raw tree as CDP returns it (every page)':
      Math.min(...rawJsonRatios) >= 5,
    'at least 5x fewer tokens than the raw tree printed as unpruned lines (every page)':
      Math.min(...rawRatios) >= 5,
    'at least 5x fewer tokens than the raw tree printed as unpruned lines (all pages together)':
      sum((page) => page.raw.tokens) / sum((page) => page.ours.tokens) >= 5,
    'no more tokens than BrowserGym (every page)':
      summary.browsergymOverOurs.pagesWhereOursHasMore === 0,
    'every actionable element kept': summary.actionable.kept === summary.actionable.total,
    'faster than BrowserGym end to end (total)': summary.ms.speedup > 1,
  };
  const output = {
    benchmark: 'axtree',
    date: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      cpu: cpus()[0]?.model,
      chromium: browsergym.version,
      node: process.version,
    },
    method: {
      repeats: REPEATS,
      tokenizer: 'SmolLM2-135M-Instruct (GGUF vocabulary, node-llama-cpp)',
      ours: '@dreamgym/browser PageObserver.observe: CDP capture of every frame, flattening and formatting (header and URL line included)',
      raw: 'every node of Accessibility.getFullAXTree for every frame, one line each with all properties; raw.jsonTokens: the same nodes as CDP JSON',
      browsergym:
        'browsergym-core 0.14.3 observation pipeline (BrowserEnv._get_obs: mark, DOM snapshot, merged AX tree, focused element, extra properties, unmark) and flatten_axtree_to_str with its defaults, in Python Playwright 1.44 on the same Chromium binary',
      actionable:
        'rendered elements with DOMSnapshot isClickable (not html/body) or that take input (input, textarea, select, contenteditable); kept when the element has an id in our observation (a label: when its control has)',
    },
    summary,
    targets,
    pages,
  };
  const resultsFile = join(here, 'results', 'axtree.json');
  await writeFile(resultsFile, `${JSON.stringify(output, null, 2)}\n`);
  console.log(JSON.stringify({ summary, targets }, null, 2));
  console.log(`wrote ${resultsFile}`);
  await model.dispose();
  await llama.dispose();
}

await main();
