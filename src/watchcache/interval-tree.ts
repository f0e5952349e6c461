/**
 * Stabbing queries over half-open key intervals [start, end): "which intervals contain key k".
 *
 * A treap ordered by (start, end), each node augmented with the greatest `end` in its subtree
 * (null = unbounded, greater than every key). A query visits only subtrees whose greatest end
 * is above k and whose starts can be <= k, so it costs O(log n + matches) expected, however
 * many intervals there are. Insert and remove cost O(log n) expected. Equal intervals share a
 * node (a Set of members), so a thousand watchers on one range are one node.
 *
 * Keys are latin1 strings (see keys.ts), compared with `<`.
 */

interface Node<T> {
  start: string;
  end: string | null;
  /** Greatest end in this subtree; null = unbounded. */
  maxEnd: string | null;
  priority: number;
  left: Node<T> | null;
  right: Node<T> | null;
  members: Set<T>;
}

/** a < b with null as +infinity. */
function endLess(a: string | null, b: string | null): boolean {
  if (a === null) return false;
  return b === null || a < b;
}

function compare(s1: string, e1: string | null, s2: string, e2: string | null): number {
  if (s1 !== s2) return s1 < s2 ? -1 : 1;
  if (e1 === e2) return 0;
  return endLess(e1, e2) ? -1 : 1;
}

export class IntervalTree<T> {
  private root: Node<T> | null = null;
  private _size = 0;
  /** Deterministic priorities (xorshift), so behaviour does not depend on Math.random. */
  private seed = 0x9e3779b9;

  /** Number of members (not nodes). */
  get size(): number {
    return this._size;
  }

  add(start: string, end: string | null, member: T): void {
    this.root = this.insert(this.root, start, end, member);
  }

  remove(start: string, end: string | null, member: T): boolean {
    const before = this._size;
    this.root = this.delete(this.root, start, end, member);
    return this._size < before;
  }

  /**
   * Calls `visit` for each member whose interval contains `key`. Returns the number of nodes
   * examined (the work, for tests and metrics).
   */
  stab(key: string, visit: (member: T) => void): number {
    let work = 0;
    const walk = (n: Node<T> | null): void => {
      if (n === null) return;
      work++;
      if (n.maxEnd !== null && n.maxEnd <= key) return; // nothing here ends after key
      walk(n.left);
      if (n.start > key) return; // this node and its right subtree start after key
      if (n.end === null || key < n.end) for (const m of n.members) visit(m);
      walk(n.right);
    };
    walk(this.root);
    return work;
  }

  private nextPriority(): number {
    let x = this.seed;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.seed = x >>> 0;
    return this.seed;
  }

  private insert(n: Node<T> | null, start: string, end: string | null, m: T): Node<T> {
    if (n === null) {
      this._size++;
      const members = new Set<T>([m]);
      return {
        start,
        end,
        maxEnd: end,
        priority: this.nextPriority(),
        left: null,
        right: null,
        members,
      };
    }
    const c = compare(start, end, n.start, n.end);
    if (c === 0) {
      if (!n.members.has(m)) {
        n.members.add(m);
        this._size++;
      }
      return n;
    }
    if (c < 0) {
      n.left = this.insert(n.left, start, end, m);
      if (n.left.priority > n.priority) return this.rotateRight(n);
    } else {
      n.right = this.insert(n.right, start, end, m);
      if (n.right.priority > n.priority) return this.rotateLeft(n);
    }
    update(n);
    return n;
  }

  private delete(n: Node<T> | null, start: string, end: string | null, m: T): Node<T> | null {
    if (n === null) return null;
    const c = compare(start, end, n.start, n.end);
    if (c < 0) n.left = this.delete(n.left, start, end, m);
    else if (c > 0) n.right = this.delete(n.right, start, end, m);
    else {
      if (n.members.delete(m)) this._size--;
      if (n.members.size > 0) return n;
      return this.merge(n.left, n.right);
    }
    update(n);
    return n;
  }

  /** Joins two treaps where every node of `a` orders before every node of `b`. */
  private merge(a: Node<T> | null, b: Node<T> | null): Node<T> | null {
    if (a === null) return b;
    if (b === null) return a;
    if (a.priority > b.priority) {
      a.right = this.merge(a.right, b);
      update(a);
      return a;
    }
    b.left = this.merge(a, b.left);
    update(b);
    return b;
  }

  private rotateRight(n: Node<T>): Node<T> {
    const l = n.left!;
    n.left = l.right;
    l.right = n;
    update(n);
    update(l);
    return l;
  }

  private rotateLeft(n: Node<T>): Node<T> {
    const r = n.right!;
    n.right = r.left;
    r.left = n;
    update(n);
    update(r);
    return r;
  }
}

function update<T>(n: Node<T>): void {
  let max = n.end;
  if (n.left !== null && endLess(max, n.left.maxEnd)) max = n.left.maxEnd;
  if (n.right !== null && endLess(max, n.right.maxEnd)) max = n.right.maxEnd;
  n.maxEnd = max;
}
