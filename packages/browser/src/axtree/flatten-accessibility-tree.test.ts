import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { RawAccessibilitySnapshot } from './accessibility-snapshot.js';
import { ElementIdAllocator } from './element-ids.js';
import { flattenAccessibilityTree } from './flatten-accessibility-tree.js';

// Raw snapshots recorded from the test pages (src/__fixtures__/pages) on Chromium 156.
const fixtures = join(dirname(fileURLToPath(import.meta.url)), '..', '__fixtures__', 'snapshots');
const load = (name: string): RawAccessibilitySnapshot =>
  JSON.parse(readFileSync(join(fixtures, `${name}.json`), 'utf8'));

const flatten = (
  snapshot: RawAccessibilitySnapshot,
  viewportOnly = false,
  ids = new ElementIdAllocator(),
) => flattenAccessibilityTree(snapshot, { ids, viewportOnly });

const rolesOf = (snapshot: RawAccessibilitySnapshot) =>
  new Set(snapshot.frames.flatMap((frame) => frame.nodes.map((node) => String(node.role?.value))));

describe('flattenAccessibilityTree', () => {
  it('prints a form as WebArena-style lines with an allow-list of properties', () => {
    const { lines, elements } = flatten(load('form'));
    expect(lines).toEqual([
      "[1] heading 'Order form'",
      '[2] form',
      "\t[3] textbox 'Full name' required: true",
      "\t[4] textbox 'Password'",
      "\t[5] textbox 'Notes'",
      "\t[6] combobox 'Size' value: 'Medium', expanded: false",
      "\t\t[7] option 'Small'",
      "\t\t[8] option 'Medium' selected: true",
      "\t\t[9] option 'Large'",
      "\t[10] group 'Delivery'",
      "\t\t[11] radio 'Standard' checked: true",
      "\t\t[12] radio 'Express' checked: false",
      "\t[13] checkbox 'Gift wrap' checked: false",
      "\t[14] button 'Place order'",
      "\t[15] button 'Cancel' disabled: true",
      "[16] link 'Shipping info' url: /form.html#shipping",
      "StaticText 'No key pressed'",
      "[17] status 'Not submitted'",
    ]);
    expect(elements.get(3)).toMatchObject({ role: 'textbox', name: 'Full name', session: 'main' });
    expect(elements.get(3)!.backendNodeId).toBeGreaterThan(0);
    expect(elements.size).toBe(17);
  });

  it('prunes what the raw tree carries: text boxes, label wrappers, nameless generics, noise properties', () => {
    const snapshot = load('form');
    const raw = rolesOf(snapshot);
    for (const role of ['InlineTextBox', 'LabelText', 'generic', 'MenuListPopup', 'Legend']) {
      expect(raw.has(role)).toBe(true);
    }
    const text = flatten(snapshot).lines.join('\n');
    for (const noise of [
      'InlineTextBox',
      'LabelText',
      'generic',
      'MenuListPopup',
      'Legend',
      'focusable',
      'invalid',
      'editable',
      'settable',
      'RootWebArea',
    ]) {
      expect(text).not.toContain(noise);
    }
    // The label's own text repeats the field's name: it is dropped, the field keeps it.
    expect(text).not.toMatch(/StaticText 'Full name'/);
  });

  it('keeps ids stable across observations, and gives new nodes new ids', () => {
    const ids = new ElementIdAllocator();
    const snapshot = load('form');
    const first = flatten(snapshot, false, ids);
    // The page changes: a new button appears before everything else.
    const changed: RawAccessibilitySnapshot = structuredClone(snapshot);
    const main = changed.frames[0]!;
    main.nodes.push({
      nodeId: 'new-node',
      ignored: false,
      role: { value: 'button' },
      name: { value: 'Newly added' },
      childIds: [],
      backendDOMNodeId: 99_999,
    });
    const root = main.nodes[0]!;
    root.childIds = ['new-node', ...(root.childIds ?? [])];
    const second = flatten(changed, false, ids);
    expect(second.lines[0]).toBe("[18] button 'Newly added'");
    expect(second.lines.slice(1)).toEqual(first.lines);
    expect(second.elements.get(3)).toEqual(first.elements.get(3));
  });

  it('stitches same-origin and out-of-process iframes in place', () => {
    const snapshot = load('frames');
    expect(new Set(snapshot.frames.map((frame) => frame.session)).size).toBe(2);
    const { lines, elements } = flatten(snapshot);
    expect(lines).toEqual([
      "[1] heading 'Page with frames'",
      "StaticText 'Outer text'",
      "[2] Iframe 'Same-origin frame'",
      "\t[3] button 'Inner button'",
      "\t[4] textbox 'Inner field'",
      "\tStaticText 'Inner idle'",
      "[5] Iframe 'Cross-origin frame'",
      "\t[6] button 'Remote button'",
      "\t[7] textbox 'Inner field'",
      "\tStaticText 'Remote idle'",
      "[8] button 'After frames'",
    ]);
    expect(elements.get(6)!.session).not.toBe('main');
    expect(elements.get(3)!.session).toBe('main');
    expect(elements.get(3)!.frameId).not.toBe(elements.get(8)!.frameId);
  });

  it('leaves out hidden elements, and off-screen ones only with the viewport filter', () => {
    const snapshot = load('hidden');
    const whole = flatten(snapshot).lines.join('\n');
    for (const hidden of ['Display none', 'Visibility hidden', 'Hidden attribute', 'Aria hidden']) {
      expect(whole).not.toContain(hidden);
    }
    expect(whole).toContain("button 'Far below button'");
    expect(whole).toContain("link 'Off to the left link'");
    const visible = flatten(snapshot, true).lines;
    expect(visible).toEqual([
      "[1] button 'Visible button'",
      "StaticText 'Deeply wrapped text'",
      "[2] generic 'Clickable card'",
      "StaticText 'Repeated'",
    ]);
  });

  it('returns nothing for an empty snapshot', () => {
    const empty: RawAccessibilitySnapshot = {
      url: 'about:blank',
      title: '',
      viewport: { x: 0, y: 0, width: 0, height: 0 },
      frames: [],
    };
    expect(flatten(empty).lines).toEqual([]);
  });
});
