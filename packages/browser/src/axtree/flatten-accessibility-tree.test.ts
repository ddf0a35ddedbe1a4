import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { RawAccessibilitySnapshot } from './accessibility-snapshot.js';
import { ElementIdAllocator } from './element-ids.js';
import { displayUrl, flattenAccessibilityTree } from './flatten-accessibility-tree.js';

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
      'form',
      "\t[2] textbox 'Full name' required: true",
      "\t[3] textbox 'Password'",
      "\t[4] textbox 'Notes'",
      "\t[5] combobox 'Size' value: 'Medium', expanded: false",
      "\t\t[6] option 'Small'",
      "\t\t[7] option 'Medium' selected: true",
      "\t\t[8] option 'Large'",
      "\tgroup 'Delivery'",
      "\t\t[9] radio 'Standard' checked: true",
      "\t\t[10] radio 'Express' checked: false",
      "\t[11] checkbox 'Gift wrap' checked: false",
      "\t[12] button 'Place order'",
      "\t[13] button 'Cancel' disabled: true",
      "[14] link 'Shipping info' url: #shipping",
      "StaticText 'No key pressed'",
      "[15] status 'Not submitted'",
    ]);
    expect(elements.get(2)).toMatchObject({ role: 'textbox', name: 'Full name', session: 'main' });
    expect(elements.get(2)!.backendNodeId).toBeGreaterThan(0);
    expect(elements.size).toBe(15);
  });

  it('prunes what the raw tree carries: text boxes, label wrappers, nameless generics, noise properties', () => {
    // Containers that take no action (the form, the radio group) have no id: ids are for acting.
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
    expect(second.lines[0]).toBe("[16] button 'Newly added'");
    expect(second.lines.slice(1)).toEqual(first.lines);
    expect(second.elements.get(2)).toEqual(first.elements.get(2));
  });

  it('stitches same-origin and out-of-process iframes in place', () => {
    const snapshot = load('frames');
    expect(new Set(snapshot.frames.map((frame) => frame.session)).size).toBe(2);
    const { lines, elements } = flatten(snapshot);
    expect(lines).toEqual([
      "[1] heading 'Page with frames'",
      "StaticText 'Outer text'",
      "Iframe 'Same-origin frame'",
      "\t[2] button 'Inner button'",
      "\t[3] textbox 'Inner field'",
      "\tStaticText 'Inner idle'",
      "Iframe 'Cross-origin frame'",
      "\t[4] button 'Remote button'",
      "\t[5] textbox 'Inner field'",
      "\tStaticText 'Remote idle'",
      "[6] button 'After frames'",
    ]);
    expect(elements.get(4)!.session).not.toBe('main');
    expect(elements.get(2)!.session).toBe('main');
    expect(elements.get(2)!.frameId).not.toBe(elements.get(6)!.frameId);
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

  it('prints link URLs compactly: relative on the origin, a fragment on the page, long queries cut, paths whole', () => {
    const base = new URL('http://127.0.0.1:8000/shop/list.html?page=2');
    expect(displayUrl('http://127.0.0.1:8000/shop/item.html', base)).toBe('/shop/item.html');
    expect(displayUrl('http://127.0.0.1:8000/shop/list.html?page=2#reviews', base)).toBe(
      '#reviews',
    );
    expect(displayUrl('http://127.0.0.1:8000/shop/list.html?page=3', base)).toBe(
      '/shop/list.html?page=3',
    );
    expect(displayUrl('https://example.com/a', base)).toBe('https://example.com/a');
    expect(displayUrl(`http://127.0.0.1:8000/track?${'utm=campaign&'.repeat(10)}`, base)).toBe(
      '/track?…',
    );
    // A long path stays whole: the agent can goto what it reads.
    const longPath = `/${'very-long-path/'.repeat(8)}`;
    expect(displayUrl(`http://127.0.0.1:8000${longPath}`, base)).toBe(longPath);
    expect(displayUrl(`http://127.0.0.1:8000${longPath}?${'a=1&'.repeat(21)}#top`, base)).toBe(
      `${longPath}?…#top`,
    );
    expect(displayUrl('javascript:void(0)', base)).toBe('javascript:void(0)');
  });

  it('elides a query only when it is over 80 characters: a long URL with a short query stays whole', () => {
    const base = new URL('http://127.0.0.1:8000/');
    const page = `/${'documentation/'.repeat(6)}page.html`;
    const query = (length: number) => `q=${'x'.repeat(length - 2)}`;
    // 101 characters of path and a short query: nothing is cut.
    expect(displayUrl(`http://127.0.0.1:8000${page}?lang=en`, base)).toBe(`${page}?lang=en`);
    // A query of exactly 80 characters is kept; 81 are elided, the fragment kept.
    expect(query(80)).toHaveLength(80);
    expect(displayUrl(`http://127.0.0.1:8000${page}?${query(80)}`, base)).toBe(
      `${page}?${query(80)}`,
    );
    expect(displayUrl(`http://127.0.0.1:8000${page}?${query(81)}#end`, base)).toBe(`${page}?…#end`);
    // Another origin: the same rule after the origin.
    expect(displayUrl(`https://example.com/a?${query(80)}`, base)).toBe(
      `https://example.com/a?${query(80)}`,
    );
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
