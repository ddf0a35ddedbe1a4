/**
 * A small, tolerant HTML reader for WebShop's server-rendered pages: elements with their
 * attributes, text nodes, `<script>`/`<style>` kept as raw text, entities decoded. It is not
 * a general HTML parser (no implied end tags beyond void elements and mismatched closes).
 */

/** An element of the tree. */
export interface HtmlElement {
  tag: string;
  attributes: Record<string, string>;
  children: HtmlNode[];
  parent: HtmlElement | undefined;
}
/** A text node. */
export interface HtmlText {
  text: string;
  parent: HtmlElement;
}
export type HtmlNode = HtmlElement | HtmlText;

const VOID = new Set([
  'area',
  'base',
  'br',
  'col',
  'embed',
  'hr',
  'img',
  'input',
  'link',
  'meta',
  'source',
  'track',
  'wbr',
]);
const RAW_TEXT = new Set(['script', 'style', 'textarea', 'title']);
const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: '\u00a0',
  rsaquo: '›',
  lsaquo: '‹',
};

/** Decodes character references (`&lt;`, `&#39;`, `&#x27;`). */
export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] === '#') {
      const code =
        name[1] === 'x' || name[1] === 'X'
          ? Number.parseInt(name.slice(2), 16)
          : Number(name.slice(1));
      return Number.isFinite(code) ? String.fromCodePoint(code) : whole;
    }
    return NAMED_ENTITIES[name.toLowerCase()] ?? whole;
  });
}

function parseAttributes(source: string): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const match of source.matchAll(/([^\s=/"'>]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s"'>]+))?/g)) {
    const value = match[2] ?? '';
    attributes[match[1]!.toLowerCase()] = decodeEntities(
      value.startsWith('"') || value.startsWith("'") ? value.slice(1, -1) : value,
    );
  }
  return attributes;
}

/** Parses `html` into a tree under a synthetic `#document` element. */
export function parseHtml(html: string): HtmlElement {
  const root: HtmlElement = { tag: '#document', attributes: {}, children: [], parent: undefined };
  let current = root;
  let index = 0;
  const addText = (text: string) => {
    if (text.length > 0) current.children.push({ text: decodeEntities(text), parent: current });
  };
  while (index < html.length) {
    const open = html.indexOf('<', index);
    if (open < 0) {
      addText(html.slice(index));
      break;
    }
    addText(html.slice(index, open));
    if (html.startsWith('<!--', open)) {
      const end = html.indexOf('-->', open + 4);
      index = end < 0 ? html.length : end + 3;
      continue;
    }
    if (html[open + 1] === '!' || html[open + 1] === '?') {
      const end = html.indexOf('>', open);
      index = end < 0 ? html.length : end + 1;
      continue;
    }
    const close = html.indexOf('>', open);
    if (close < 0) {
      addText(html.slice(open));
      break;
    }
    const inside = html.slice(open + 1, close);
    index = close + 1;
    if (inside.startsWith('/')) {
      const tag = inside.slice(1).trim().toLowerCase();
      // Close the nearest open element of that tag; ignore a stray end tag.
      for (let node: HtmlElement | undefined = current; node && node !== root; node = node.parent) {
        if (node.tag === tag) {
          current = node.parent ?? root;
          break;
        }
      }
      continue;
    }
    const nameMatch = /^([a-zA-Z][\w:-]*)/.exec(inside);
    if (!nameMatch) {
      addText(`<${inside}>`);
      continue;
    }
    const tag = nameMatch[1]!.toLowerCase();
    const element: HtmlElement = {
      tag,
      attributes: parseAttributes(inside.slice(nameMatch[0].length).replace(/\/\s*$/, '')),
      children: [],
      parent: current,
    };
    current.children.push(element);
    if (VOID.has(tag) || inside.trimEnd().endsWith('/')) continue;
    if (RAW_TEXT.has(tag)) {
      const end = html.toLowerCase().indexOf(`</${tag}`, index);
      const stop = end < 0 ? html.length : end;
      if (stop > index) element.children.push({ text: html.slice(index, stop), parent: element });
      const after = end < 0 ? -1 : html.indexOf('>', end);
      index = after < 0 ? html.length : after + 1;
      continue;
    }
    current = element;
  }
  return root;
}

export function isElement(node: HtmlNode): node is HtmlElement {
  return 'tag' in node;
}

/** Every element under `root`, in document order. */
export function* elements(root: HtmlElement): Generator<HtmlElement> {
  for (const child of root.children) {
    if (isElement(child)) {
      yield child;
      yield* elements(child);
    }
  }
}

/** Whether `element` has class `name`. */
export function hasClass(element: HtmlElement, name: string): boolean {
  return (element.attributes.class ?? '').split(/\s+/).includes(name);
}

/** The element's text, with runs of white space collapsed. */
export function textOf(node: HtmlNode): string {
  if (!isElement(node)) return node.text;
  return node.children.map(textOf).join(' ').replace(/\s+/g, ' ').trim();
}

/**
 * The visible text nodes in document order, as WebShop's `tag_visible` decides: not inside
 * `style`, `script`, `head`, `title` or `meta`; trimmed, blank ones dropped.
 */
export function visibleTexts(root: HtmlElement): HtmlText[] {
  const hidden = new Set(['style', 'script', 'head', 'title', 'meta']);
  const texts: HtmlText[] = [];
  const walk = (element: HtmlElement) => {
    if (hidden.has(element.tag)) return;
    for (const child of element.children) {
      if (isElement(child)) walk(child);
      else if (child.text.trim() !== '') texts.push(child);
    }
  };
  walk(root);
  return texts;
}
