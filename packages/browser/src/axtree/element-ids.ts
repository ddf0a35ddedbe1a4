/**
 * Element ids that stay stable across the steps of an episode: each DOM node the agent has
 * been shown keeps the small number it got the first time, for as long as the node lives
 * (a node is identified by its frame's CDP session, its document's loader id and its
 * backend node id). Small numbers cost fewer tokens than CDP's backend ids, and a new
 * document can never reuse an old number.
 */

/** Where an element id points: enough to find the DOM node again over CDP. */
export interface ElementLocation {
  /** The CDP session that serves the node's frame (`main` or an out-of-process frame's). */
  session: string;
  /** CDP frame id of the node's document. */
  frameId: string;
  /** CDP loader id of the node's document. */
  loaderId: string;
  /** CDP backend DOM node id. */
  backendNodeId: number;
}

/** An element of an observation: its id, what the agent was shown, and where it lives. */
export interface ObservedElement extends ElementLocation {
  id: number;
  role: string;
  name: string;
  /** The printed properties (`checked`, `value`, `url`...), as text. */
  properties: Record<string, string>;
}

/** Hands out stable element ids for one episode. */
export class ElementIdAllocator {
  private nextId = 1;
  private readonly ids = new Map<string, number>();

  /** The id of the node at `location`, allocating the next free one on first sight. */
  idOf(location: ElementLocation): number {
    const key = `${location.session}|${location.loaderId}|${location.backendNodeId}`;
    let id = this.ids.get(key);
    if (id === undefined) {
      id = this.nextId;
      this.nextId += 1;
      this.ids.set(key, id);
    }
    return id;
  }

  /** How many ids have been handed out. */
  get size(): number {
    return this.ids.size;
  }
}
