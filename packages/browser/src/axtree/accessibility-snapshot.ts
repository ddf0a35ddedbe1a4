/**
 * The raw accessibility snapshot of a page: Chromium's full AX tree of every frame
 * (`Accessibility.getFullAXTree` per frame, over CDP), each frame's owner element in its
 * parent frame (to stitch iframes in place), which DOM nodes respond to clicks, and, when
 * asked, their layout boxes (for the viewport filter).
 *
 * The snapshot is plain JSON, so tests can record one in `__fixtures__/` and map it without a
 * browser ({@link flattenAccessibilityTree} is a pure function of it).
 */
import type { CDPSession, Frame, Page } from 'playwright-core';

/** One property of an AX node, as CDP gives it. */
export interface RawAxProperty {
  name: string;
  value?: { type?: string; value?: unknown };
}

/** One node of Chromium's AX tree, as CDP's `Accessibility.AXNode` (the fields DreamGym reads). */
export interface RawAxNode {
  nodeId: string;
  ignored: boolean;
  role?: { value?: unknown };
  name?: { value?: unknown };
  value?: { value?: unknown };
  properties?: RawAxProperty[];
  childIds?: string[];
  backendDOMNodeId?: number;
}

/** The AX tree of one frame (document). */
export interface RawFrameSnapshot {
  /** CDP frame id. */
  frameId: string;
  /** CDP loader id of the frame's current document: node ids are unique within it. */
  loaderId: string;
  /** The parent frame's id; undefined for the page's main frame. */
  parentFrameId?: string;
  /** Backend DOM node id of the `<iframe>` (or `<frame>`) element in the parent frame. */
  ownerBackendNodeId?: number;
  /** Which CDP session the frame's node ids belong to (`main`, or an out-of-process frame's). */
  session: string;
  url: string;
  /** The frame's nodes; the first is its root (`RootWebArea`). */
  nodes: RawAxNode[];
  /**
   * Backend node ids of the frame's elements that respond to mouse clicks (listeners, links,
   * controls); the document, `<html>` and `<body>` are left out (page-wide listeners say
   * nothing about an element).
   */
  clickable: number[];
  /**
   * Backend node ids of the frame's block-level elements (display other than `inline*` and
   * `contents`): text is never joined across them.
   */
  blocks: number[];
  /**
   * Layout boxes `[x, y, width, height]` by backend node id, in the page's coordinates (the
   * frame's offset added), when the snapshot was taken with `withBounds`.
   */
  bounds?: Record<number, [number, number, number, number]>;
}

/** The whole page's raw accessibility snapshot. */
export interface RawAccessibilitySnapshot {
  url: string;
  title: string;
  /** The visible part of the page, in page coordinates (CSS pixels). */
  viewport: { x: number; y: number; width: number; height: number };
  frames: RawFrameSnapshot[];
}

/** Options of {@link captureAccessibilitySnapshot}. */
export interface CaptureOptions {
  /** Also read layout boxes (needed for the viewport filter). Default false. */
  withBounds?: boolean;
}

interface FrameTreeNode {
  frame: { id: string; parentId?: string; loaderId: string; url: string; name?: string };
  childFrames?: FrameTreeNode[];
}

interface DomSnapshotDocument {
  frameId: number;
  scrollOffsetX?: number;
  scrollOffsetY?: number;
  nodes: { backendNodeId?: number[]; nodeName?: number[]; isClickable?: { index: number[] } };
  layout: { nodeIndex: number[]; bounds: number[][]; styles: number[][] };
}

interface DomSnapshot {
  documents: DomSnapshotDocument[];
  strings: string[];
}

/**
 * The CDP sessions of a page: one for the page (its main frame and every frame in the same
 * renderer process) and one per out-of-process iframe (a cross-site frame under site
 * isolation), which has its own node ids. Sessions are opened once and kept for the page's
 * life, so Chromium keeps its accessibility tree warm between observations.
 */
export class PageSessions {
  private main: Promise<CDPSession> | undefined;
  /** Per frame: its own session (out-of-process), or null with the origin it was probed at. */
  private readonly frames = new WeakMap<Frame, { origin: string; session: CDPSession | null }>();
  private readonly sessionNames = new WeakMap<CDPSession, string>();
  private counter = 0;

  constructor(readonly page: Page) {}

  /** The page's own session. */
  mainSession(): Promise<CDPSession> {
    this.main ??= this.page
      .context()
      .newCDPSession(this.page)
      .then((session) => {
        this.sessionNames.set(session, 'main');
        return session;
      });
    return this.main;
  }

  /** The session name used in snapshots for `session`. */
  nameOf(session: CDPSession): string {
    return this.sessionNames.get(session) ?? 'main';
  }

  /** Every session of the page: the main one first, then one per out-of-process frame. */
  async all(): Promise<CDPSession[]> {
    const main = await this.mainSession();
    const sessions = [main];
    const children = this.page.frames().filter((frame) => frame !== this.page.mainFrame());
    const probed = await Promise.all(children.map((frame) => this.ownSession(frame)));
    for (const session of probed) if (session) sessions.push(session);
    return sessions;
  }

  /** The session of a named snapshot session. */
  async byName(name: string): Promise<CDPSession | undefined> {
    for (const session of await this.all()) if (this.nameOf(session) === name) return session;
    return undefined;
  }

  private async ownSession(frame: Frame): Promise<CDPSession | null> {
    if (frame.isDetached()) return null;
    let origin: string;
    try {
      origin = new URL(frame.url()).origin;
    } catch {
      origin = frame.url();
    }
    const known = this.frames.get(frame);
    if (known && (known.session !== null || known.origin === origin)) return known.session;
    let session: CDPSession | null = null;
    try {
      session = await this.page.context().newCDPSession(frame);
      this.counter += 1;
      this.sessionNames.set(session, `oopif-${this.counter}`);
    } catch {
      // Playwright refuses frames that share their parent's process: they are served by the
      // parent's session.
      session = null;
    }
    this.frames.set(frame, { origin, session });
    return session;
  }
}

function flattenFrameTree(tree: FrameTreeNode, into: FrameTreeNode['frame'][] = []) {
  into.push(tree.frame);
  for (const child of tree.childFrames ?? []) flattenFrameTree(child, into);
  return into;
}

interface DocumentLayout {
  clickable: number[];
  blocks: number[];
  boxes: Map<number, number[]>;
  scroll: [number, number];
}

/** Node names whose click listeners are page-wide, not an element's. */
const PAGE_NODES = new Set(['#document', 'HTML', 'BODY']);

function layoutOfDocuments(snapshot: DomSnapshot): Map<string, DocumentLayout> {
  const byFrame = new Map<string, DocumentLayout>();
  for (const document of snapshot.documents) {
    const frameId = snapshot.strings[document.frameId] ?? '';
    const backendIds = document.nodes.backendNodeId ?? [];
    const names = document.nodes.nodeName ?? [];
    const clickable = (document.nodes.isClickable?.index ?? [])
      .filter((index) => !PAGE_NODES.has(snapshot.strings[names[index]!] ?? ''))
      .map((index) => backendIds[index]!);
    const boxes = new Map<number, number[]>();
    const blocks: number[] = [];
    document.layout.nodeIndex.forEach((nodeIndex, layoutIndex) => {
      const backendId = backendIds[nodeIndex];
      if (backendId === undefined || boxes.has(backendId)) return;
      boxes.set(backendId, document.layout.bounds[layoutIndex] ?? []);
      const display = snapshot.strings[document.layout.styles[layoutIndex]?.[0] ?? -1] ?? '';
      if (display !== '' && !display.startsWith('inline') && display !== 'contents') {
        blocks.push(backendId);
      }
    });
    byFrame.set(frameId, {
      clickable,
      blocks,
      boxes,
      scroll: [document.scrollOffsetX ?? 0, document.scrollOffsetY ?? 0],
    });
  }
  return byFrame;
}

/** Captures the frames one session serves: its frame tree, their AX trees, owners and clickables. */
async function captureSession(
  session: CDPSession,
  name: string,
  withBounds: boolean,
): Promise<RawFrameSnapshot[]> {
  const [{ frameTree }, domSnapshot] = await Promise.all([
    session.send('Page.getFrameTree') as Promise<{ frameTree: FrameTreeNode }>,
    session.send('DOMSnapshot.captureSnapshot', {
      computedStyles: ['display'],
    }) as unknown as Promise<DomSnapshot>,
  ]);
  const frames = flattenFrameTree(frameTree);
  const layout = layoutOfDocuments(domSnapshot);
  const captured = await Promise.all(
    frames.map(async (frame, index) => {
      const [tree, owner] = await Promise.all([
        session
          .send('Accessibility.getFullAXTree', { frameId: frame.id })
          .then((result) => result.nodes as unknown as RawAxNode[])
          // A frame can detach between the frame tree and its AX tree.
          .catch(() => undefined),
        index === 0
          ? Promise.resolve(undefined)
          : session
              .send('DOM.getFrameOwner', { frameId: frame.id })
              .then((result) => result.backendNodeId)
              .catch(() => undefined),
      ]);
      if (!tree || tree.length === 0) return undefined;
      const documentLayout = layout.get(frame.id);
      const snapshot: RawFrameSnapshot = {
        frameId: frame.id,
        loaderId: frame.loaderId,
        ...(frame.parentId === undefined ? {} : { parentFrameId: frame.parentId }),
        ...(owner === undefined ? {} : { ownerBackendNodeId: owner }),
        session: name,
        url: frame.url,
        nodes: tree,
        clickable: documentLayout?.clickable ?? [],
        blocks: documentLayout?.blocks ?? [],
      };
      if (withBounds && documentLayout) {
        const bounds: Record<number, [number, number, number, number]> = {};
        const [scrollX, scrollY] = documentLayout.scroll;
        for (const [backendId, box] of documentLayout.boxes) {
          // Layout boxes are in document coordinates; the viewport filter works in the
          // coordinates of the frame's visible area, shifted into the page below.
          bounds[backendId] = [
            (box[0] ?? 0) - scrollX,
            (box[1] ?? 0) - scrollY,
            box[2] ?? 0,
            box[3] ?? 0,
          ];
        }
        snapshot.bounds = bounds;
      }
      return snapshot;
    }),
  );
  return captured.filter((frame): frame is RawFrameSnapshot => frame !== undefined);
}

/** Moves child-frame boxes into page coordinates, by their owner element's position. */
function offsetFrameBounds(frames: RawFrameSnapshot[]): void {
  const byId = new Map(frames.map((frame) => [frame.frameId, frame]));
  const done = new Set<string>();
  const place = (frame: RawFrameSnapshot): void => {
    if (done.has(frame.frameId)) return;
    done.add(frame.frameId);
    const parent = frame.parentFrameId === undefined ? undefined : byId.get(frame.parentFrameId);
    if (!parent || !frame.bounds || frame.ownerBackendNodeId === undefined) return;
    place(parent);
    const owner = parent.bounds?.[frame.ownerBackendNodeId];
    if (!owner) return;
    for (const box of Object.values(frame.bounds)) {
      box[0] += owner[0];
      box[1] += owner[1];
    }
  };
  for (const frame of frames) place(frame);
}

/**
 * Captures the page's raw accessibility snapshot over CDP: every frame's full AX tree (also
 * out-of-process iframes, through their own sessions), iframe owners, clickable nodes and,
 * with `withBounds`, layout boxes and the viewport.
 */
export async function captureAccessibilitySnapshot(
  sessions: PageSessions,
  options: CaptureOptions = {},
): Promise<RawAccessibilitySnapshot> {
  const withBounds = options.withBounds ?? false;
  const all = await sessions.all();
  const main = all[0]!;
  const [perSession, metrics] = await Promise.all([
    Promise.all(
      all.map((session) => captureSession(session, sessions.nameOf(session), withBounds)),
    ),
    withBounds
      ? (main.send('Page.getLayoutMetrics') as Promise<{
          cssVisualViewport: { clientWidth: number; clientHeight: number };
        }>)
      : Promise.resolve(undefined),
  ]);
  const frames = perSession.flat();
  // An out-of-process frame's owner lives in its parent's process: ask the session that
  // serves the parent.
  const owners = frames.filter(
    (frame) => frame.ownerBackendNodeId === undefined && frame.parentFrameId !== undefined,
  );
  if (owners.length > 0) {
    const sessionOfFrame = new Map(frames.map((frame) => [frame.frameId, frame.session]));
    await Promise.all(
      owners.map(async (frame) => {
        const parentSessionName = sessionOfFrame.get(frame.parentFrameId!);
        const parentSession = all.find((session) => sessions.nameOf(session) === parentSessionName);
        if (!parentSession) return;
        try {
          const { backendNodeId } = await parentSession.send('DOM.getFrameOwner', {
            frameId: frame.frameId,
          });
          frame.ownerBackendNodeId = backendNodeId;
        } catch {
          // The frame detached meanwhile; it is left out of the stitched tree.
        }
      }),
    );
  }
  if (withBounds) offsetFrameBounds(frames);
  const mainFrame = frames.find((frame) => frame.parentFrameId === undefined);
  const rootName = mainFrame?.nodes[0]?.name?.value;
  return {
    url: sessions.page.url(),
    title: typeof rootName === 'string' ? rootName : '',
    viewport: {
      x: 0,
      y: 0,
      width: metrics?.cssVisualViewport.clientWidth ?? 0,
      height: metrics?.cssVisualViewport.clientHeight ?? 0,
    },
    frames,
  };
}
