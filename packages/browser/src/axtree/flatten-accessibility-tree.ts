/**
 * The AX-tree state mapper's core: a raw accessibility snapshot in, the compact text the
 * agent reads out, one line per node, `[id] role 'name' prop: value`, indented by depth.
 *
 * What is kept and what goes, and why:
 * - Ignored nodes, nameless structural nodes (`generic`, `none`, `paragraph`, `LabelText`...)
 *   and frame roots are transparent: their children move up in their place, so the tree
 *   keeps its content without wrapper lines. A node that takes clicks or focus is never
 *   transparent: every element an agent can act on keeps a line and an id.
 * - `InlineTextBox`, `LineBreak` and `ListMarker` nodes repeat their parent's text or carry
 *   no content, and static text that repeats its parent's name or one of the few lines just
 *   printed says nothing new: all are dropped.
 * - Properties are an allow-list (focused, checked, expanded, selected, pressed, disabled,
 *   required, value, url of links); booleans that are false by default are printed only when
 *   true. CDP's other properties (focusable, editable, settable, invalid, readonly, level,
 *   multiline...) are noise for an agent.
 * - A nameless node whose only content is one line of text takes that text as its name.
 * - Iframes are stitched in place: a frame's content appears under its `<iframe>` element.
 * - Optionally, nodes outside the viewport are dropped (with `viewportOnly`).
 */
import type {
  RawAccessibilitySnapshot,
  RawAxNode,
  RawFrameSnapshot,
} from './accessibility-snapshot.js';
import type { ElementIdAllocator, ObservedElement } from './element-ids.js';

/** Options of {@link flattenAccessibilityTree}. */
export interface FlattenOptions {
  /** Hands out the stable element ids (one allocator per episode). */
  ids: ElementIdAllocator;
  /** Drop nodes whose layout box lies outside the viewport (the snapshot needs bounds). Default false. */
  viewportOnly?: boolean;
  /** How many preceding lines a static text is compared with to drop repeats. Default 3. */
  repeatWindow?: number;
}

/** The flattened tree: printed lines and the elements their ids point to. */
export interface FlattenedTree {
  /** One line per kept node, indented with tabs by depth. */
  lines: string[];
  /** Every element with an id in `lines`, by id. */
  elements: Map<number, ObservedElement>;
}

/** Roles dropped with their subtree: they repeat their parent's text or carry none. */
const DROPPED_ROLES = new Set(['InlineTextBox', 'LineBreak', 'ListMarker']);

/** Roles that, without a name and without taking input, only wrap their children. */
const TRANSPARENT_WHEN_NAMELESS = new Set([
  'generic',
  'none',
  'presentation',
  'paragraph',
  'Section',
  'section',
  'LabelText',
  'Legend',
  'strong',
  'emphasis',
  'mark',
  'code',
  'time',
  'subscript',
  'superscript',
  'Abbr',
  'Pre',
  'blockquote',
  'Canvas',
  'group',
  'DescriptionListDetail',
  'DescriptionListTerm',
  'Iframe',
  'IframePresentational',
  'Details',
  'figure',
  'Figcaption',
  'Ruby',
  'insertion',
  'deletion',
  'RootWebArea',
  'WebArea',
  'MenuListPopup',
]);

/**
 * Roles transparent without a name even when they take clicks: a label's click only moves
 * focus to its control, which has its own line.
 */
const ALWAYS_TRANSPARENT_WHEN_NAMELESS = new Set(['LabelText', 'MenuListPopup']);

/** Roles that are dropped without a name unless they take clicks or focus. */
const DROPPED_WHEN_NAMELESS = new Set(['image', 'img', 'graphics-symbol', 'separator']);

/** Roles an agent acts on even when Chromium reports no click listener. */
const INTERACTIVE_ROLES = new Set([
  'link',
  'button',
  'checkbox',
  'radio',
  'textbox',
  'searchbox',
  'combobox',
  'listbox',
  'option',
  'menuitem',
  'menuitemcheckbox',
  'menuitemradio',
  'tab',
  'switch',
  'slider',
  'spinbutton',
  'treeitem',
  'MenuListOption',
  'ToggleButton',
  'PopUpButton',
  'DisclosureTriangle',
]);

/** Properties printed only when true (false is their unremarkable default). */
const TRUE_ONLY = new Set(['focused', 'selected', 'disabled', 'required']);
/** Tri-state properties printed in both states: they are the control's state. */
const BOTH_STATES = new Set(['checked', 'expanded', 'pressed']);
/** Roles whose value is printed. */
const VALUE_ROLES = new Set([
  'textbox',
  'searchbox',
  'combobox',
  'spinbutton',
  'slider',
  'progressbar',
  'meter',
  'scrollbar',
  'ComboBoxMenuButton',
  'ComboBoxSelect',
  'TextField',
  'DateTime',
  'InputTime',
  'date',
  'time',
  'ColorWell',
]);

function text(value: unknown): string {
  if (value === undefined || value === null) return '';
  return String(value).replace(/\s+/g, ' ').trim();
}

function roleOf(node: RawAxNode): string {
  return text(node.role?.value) || 'unknown';
}

function propertyOf(node: RawAxNode, name: string): unknown {
  return node.properties?.find((property) => property.name === name)?.value?.value;
}

/** Formats one property value: strings quoted, booleans and numbers bare. */
function formatValue(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  return String(value);
}

/** Longest query (the characters after `?`) a link URL is printed with; a longer one is elided (tracking parameters, mostly). */
const MAX_QUERY_LENGTH = 80;

/**
 * A link's URL as printed: relative to the page on the same origin, its fragment alone on the
 * same page (fewer tokens, same information). A query over {@link MAX_QUERY_LENGTH} characters
 * is elided as `?…`; the path, a shorter query and the fragment are always whole, so an agent can
 * `goto` what it reads wherever the query was kept (a link whose query was elided is followed by
 * clicking it).
 */
export function displayUrl(url: string, base: URL | undefined): string {
  try {
    const target = new URL(url);
    const sameOrigin = base !== undefined && target.origin === base.origin;
    const sameDocument =
      sameOrigin &&
      target.pathname === base.pathname &&
      target.search === base.search &&
      target.hash !== '';
    const prefix = sameOrigin
      ? ''
      : target.origin === 'null'
        ? `${target.protocol}`
        : target.origin;
    // An anchor on the same page is its fragment alone.
    if (sameDocument) return target.hash;
    const shown = `${prefix}${target.pathname}${target.search}${target.hash}`;
    return target.search.length - 1 > MAX_QUERY_LENGTH
      ? `${prefix}${target.pathname}?…${target.hash}`
      : shown;
  } catch {
    return url; // not a URL: printed as it is
  }
}

interface PendingLine {
  depth: number;
  /** For text: the block it belongs to (text is joined only within one block). */
  block?: string;
  /** The `role 'name'` head, without id and properties. */
  role: string;
  name: string;
  id: number | undefined;
  properties: [string, string][];
  isText: boolean;
}

function render(line: PendingLine): string {
  const indent = '\t'.repeat(line.depth);
  const id = line.id === undefined ? '' : `[${line.id}] `;
  const name = line.name === '' && !line.isText ? '' : ` '${line.name}'`;
  const properties =
    line.properties.length === 0
      ? ''
      : ` ${line.properties.map(([key, value]) => `${key}: ${value}`).join(', ')}`;
  return `${indent}${id}${line.role}${name}${properties}`;
}

/**
 * Joins runs of text lines at the same depth (text split by inline markup such as
 * `Item <b>two</b>`) into one line.
 */
function mergeAdjacentText(lines: PendingLine[], printed: PendingLine[]): void {
  for (let index = lines.length - 1; index > 0; index -= 1) {
    const line = lines[index]!;
    const before = lines[index - 1]!;
    if (
      line.isText &&
      before.isText &&
      line.depth === before.depth &&
      line.block !== undefined &&
      line.block === before.block
    ) {
      // Raw text keeps its own spaces: `Enter "` + `Jerald` + `" into` reads as typed.
      before.name = `${before.name}${line.name}`;
      lines.splice(index, 1);
      const at = printed.indexOf(line);
      if (at >= 0) printed.splice(at, 1);
    }
  }
}

/** Drops a text line that the next line repeats as its name (a label before its control). */
function dropTextBeforeSameName(lines: PendingLine[]): void {
  for (let index = lines.length - 2; index >= 0; index -= 1) {
    const line = lines[index]!;
    const next = lines[index + 1]!;
    if (line.isText && !next.isText && next.name === line.name) lines.splice(index, 1);
  }
}

function intersects(
  box: [number, number, number, number],
  viewport: RawAccessibilitySnapshot['viewport'],
): boolean {
  const [x, y, width, height] = box;
  return (
    x < viewport.x + viewport.width &&
    x + width > viewport.x &&
    y < viewport.y + viewport.height &&
    y + height > viewport.y
  );
}

/**
 * Maps a raw accessibility snapshot to the agent's text lines and the elements their ids
 * point to. Pure: the same snapshot and allocator state give the same output.
 */
export function flattenAccessibilityTree(
  snapshot: RawAccessibilitySnapshot,
  options: FlattenOptions,
): FlattenedTree {
  const repeatWindow = options.repeatWindow ?? 3;
  const viewportOnly = options.viewportOnly ?? false;
  const elements = new Map<number, ObservedElement>();
  let base: URL | undefined;
  try {
    base = new URL(snapshot.url);
  } catch {
    base = undefined;
  }
  const nodesOf = new Map<RawFrameSnapshot, Map<string, RawAxNode>>();
  const clickableOf = new Map<RawFrameSnapshot, Set<number>>();
  const blocksOf = new Map<RawFrameSnapshot, Set<number>>();
  const childFrames = new Map<string, RawFrameSnapshot>();
  for (const frame of snapshot.frames) {
    nodesOf.set(frame, new Map(frame.nodes.map((node) => [node.nodeId, node])));
    clickableOf.set(frame, new Set(frame.clickable));
    blocksOf.set(frame, new Set(frame.blocks));
    if (frame.parentFrameId !== undefined && frame.ownerBackendNodeId !== undefined) {
      childFrames.set(`${frame.parentFrameId}|${frame.ownerBackendNodeId}`, frame);
    }
  }
  const mainFrame = snapshot.frames.find((frame) => frame.parentFrameId === undefined);
  if (!mainFrame || mainFrame.nodes.length === 0) return { lines: [], elements };

  /** Printed lines so far, for the repeat check. */
  const printed: PendingLine[] = [];

  const repeatsNearby = (value: string): boolean => {
    for (
      let index = printed.length - 1;
      index >= Math.max(0, printed.length - repeatWindow);
      index -= 1
    ) {
      if (printed[index]!.name === value) return true;
    }
    return false;
  };

  /**
   * Visits `node`, returning the lines of its subtree. `context` carries the nearest printed
   * ancestor's name (for repeated text) and whether an ancestor lies outside the viewport.
   */
  const visit = (
    frame: RawFrameSnapshot,
    node: RawAxNode,
    depth: number,
    context: { ancestorText: string; outside: boolean; block: string },
    out: PendingLine[],
    seen: Set<string>,
  ): void => {
    if (seen.has(node.nodeId)) return;
    seen.add(node.nodeId);
    const role = roleOf(node);
    if (DROPPED_ROLES.has(role)) return;
    const backendId = node.backendDOMNodeId;
    const nodes = nodesOf.get(frame)!;
    const visitChildren = (
      childDepth: number,
      childContext: typeof context,
      into: PendingLine[],
    ) => {
      for (const childId of node.childIds ?? []) {
        const child = nodes.get(childId);
        if (child) visit(frame, child, childDepth, childContext, into, seen);
      }
      // An <iframe>'s document hangs below its owner element.
      if (backendId !== undefined) {
        const inner = childFrames.get(`${frame.frameId}|${backendId}`);
        const innerRoot = inner?.nodes[0];
        if (inner && innerRoot) visit(inner, innerRoot, childDepth, childContext, into, new Set());
      }
    };

    const blockHere =
      backendId !== undefined && blocksOf.get(frame)!.has(backendId)
        ? `${frame.frameId}|${backendId}`
        : undefined;
    let outside = context.outside;
    if (viewportOnly && backendId !== undefined) {
      const box = frame.bounds?.[backendId];
      if (box && (box[2] > 0 || box[3] > 0)) outside = !intersects(box, snapshot.viewport);
    }

    if (node.ignored) {
      visitChildren(depth, { ...context, outside, block: blockHere ?? context.block }, out);
      return;
    }

    const name = text(node.name?.value);
    if (role === 'StaticText') {
      if (outside || name === '') return;
      if (context.ancestorText !== '' && context.ancestorText.includes(name)) return;
      if (repeatsNearby(name)) return;
      // Text keeps its own spaces until joined with its neighbours, then is trimmed.
      const raw = String(node.name?.value).replace(/\s+/g, ' ');
      const line: PendingLine = {
        depth,
        block: context.block,
        role,
        name: raw,
        id: undefined,
        properties: [],
        isText: true,
      };
      out.push(line);
      printed.push(line);
      return;
    }

    const focusable = propertyOf(node, 'focusable') === true;
    const clickable = backendId !== undefined && clickableOf.get(frame)!.has(backendId);
    const interactive = clickable || focusable || INTERACTIVE_ROLES.has(role);
    const isFrameRoot = node === frame.nodes[0];
    if (
      isFrameRoot ||
      outside ||
      (name === '' &&
        (ALWAYS_TRANSPARENT_WHEN_NAMELESS.has(role) ||
          (!interactive && TRANSPARENT_WHEN_NAMELESS.has(role))))
    ) {
      const block = isFrameRoot ? frame.frameId : (blockHere ?? context.block);
      visitChildren(depth, { ...context, outside, block }, out);
      return;
    }
    if (name === '' && !interactive && DROPPED_WHEN_NAMELESS.has(role)) return;

    const properties: [string, string][] = [];
    const value = VALUE_ROLES.has(role) ? text(node.value?.value) : '';
    if (value !== '' && value !== name) properties.push(['value', formatValue(value)]);
    for (const property of node.properties ?? []) {
      const value = property.value?.value;
      if (TRUE_ONLY.has(property.name)) {
        if (value === true || value === 'true') properties.push([property.name, 'true']);
      } else if (BOTH_STATES.has(property.name)) {
        if (value !== undefined && value !== null && value !== '') {
          properties.push([property.name, String(value)]);
        }
      } else if (property.name === 'url' && role === 'link' && typeof value === 'string') {
        properties.push(['url', displayUrl(value, base)]);
      }
    }

    const line: PendingLine = {
      depth,
      role,
      name,
      id: undefined,
      properties,
      isText: false,
    };
    out.push(line);
    printed.push(line);
    const allocateId = () => {
      if (backendId === undefined) return;
      line.id = options.ids.idOf({
        session: frame.session,
        frameId: frame.frameId,
        loaderId: frame.loaderId,
        backendNodeId: backendId,
      });
    };
    // Elements an agent acts on get their id before their content, so ids follow the page
    // order; other nodes get one only if they end up a leaf (see below).
    if (interactive) allocateId();
    const children: PendingLine[] = [];
    visitChildren(
      depth + 1,
      {
        ancestorText: name || value ? `${name}\n${value}` : context.ancestorText,
        outside,
        block: `${frame.frameId}|${node.nodeId}`,
      },
      children,
    );
    mergeAdjacentText(children, printed);
    // A nameless node whose only content is one line of text is named by that text.
    if (name === '' && children.length === 1 && children[0]!.isText) {
      line.name = children[0]!.name.trim();
      printed.splice(printed.indexOf(children[0]!), 1);
    } else if (
      name === '' &&
      !interactive &&
      properties.length === 0 &&
      children.length > 0 &&
      !children[0]!.isText &&
      children.slice(1).every((child) => child.depth > depth + 1)
    ) {
      // A nameless wrapper of a single element (a list item around a link) says nothing
      // the element does not: the element takes its place.
      out.pop();
      printed.splice(printed.indexOf(line), 1);
      for (const child of children) child.depth -= 1;
      out.push(...children);
      return;
    } else {
      out.push(...children);
    }
    // A container that takes no action needs no id (ids are for acting); a leaf keeps one,
    // so that it can be hovered or clicked all the same.
    if (!interactive && (children.length === 0 || line.name !== name)) allocateId();
    if (line.id !== undefined && backendId !== undefined) {
      elements.set(line.id, {
        id: line.id,
        role,
        name: line.name,
        properties: Object.fromEntries(properties),
        session: frame.session,
        frameId: frame.frameId,
        loaderId: frame.loaderId,
        backendNodeId: backendId,
      });
    }
  };

  const out: PendingLine[] = [];
  visit(
    mainFrame,
    mainFrame.nodes[0]!,
    0,
    { ancestorText: '', outside: false, block: mainFrame.frameId },
    out,
    new Set(),
  );
  mergeAdjacentText(out, printed);
  for (const line of out) if (line.isText) line.name = line.name.trim();
  dropTextBeforeSameName(out);
  return { lines: out.map(render), elements };
}
