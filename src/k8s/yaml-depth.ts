/**
 * A bound on how deeply a YAML text nests, read from the raw characters before any YAML
 * parser runs. The `yaml` package's parser and composer take time and memory in proportion
 * to nesting (1.4 MB of `[` took seconds and gigabytes before failing on the call stack), so
 * bodies are measured first and refused when the bound passes the body depth limit.
 *
 * One linear pass over char codes, no allocation per character. The bound is meant to be at
 * least the depth the parser would build:
 * - flow collections: `[` and `{` at token starts open a level, `]` and `}` close one;
 * - block collections: a stack of indentation columns (a line pops the columns deeper than
 *   its own), plus one level for each `- `, `? ` or `: ` indicator chaining nodes on a line,
 *   and a sequence sharing its parent mapping's column;
 * - inside text the parser reads as a scalar or comment (quoted, plain, block scalar, `#`),
 *   brackets still count while they are open and only cancel brackets of the same stretch of
 *   text; what stays open there is kept for the rest of the document.
 * For well-formed YAML this is an upper bound of the parser's depth; in malformed text the
 * parser's error recovery can add levels the scan does not model (a `- ` inside `[...]`),
 * which the property test (test/k8s/lib/yaml-depth.test.ts) holds to within twice the bound.
 * So a body that passes costs the parser work bounded by the limit, not by its size, and the
 * exact limit is checked again on the parsed value. Leaf scalars add at most one level, so
 * documents near the limit may be refused a level early; Kubernetes objects nest far less.
 */

const SPACE = 0x20;
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const HASH = 0x23;
const DASH = 0x2d;
const DOT = 0x2e;
const QUESTION = 0x3f;
const COLON = 0x3a;
const COMMA = 0x2c;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const DQUOTE = 0x22;
const SQUOTE = 0x27;
const PIPE = 0x7c;
const GT = 0x3e;
const BANG = 0x21;
const AMP = 0x26;
const STAR = 0x2a;
const PERCENT = 0x25;
const BACKSLASH = 0x5c;

function isBlank(c: number): boolean {
  return c === SPACE || c === TAB;
}

/** White space, a line break, or the end of the text (NaN from charCodeAt). */
function isEmpty(c: number): boolean {
  return c === SPACE || c === TAB || c === LF || c === CR || Number.isNaN(c);
}

function isFlowIndicator(c: number): boolean {
  return c === COMMA || c === LBRACKET || c === RBRACKET || c === LBRACE || c === RBRACE;
}

/** True when `text` may nest deeper than `limit` levels of mappings and sequences. */
export function yamlNestsDeeperThan(text: string, limit: number): boolean {
  return new DepthScan(text, limit).run();
}

class DepthScan {
  private i = 0;
  private readonly n: number;
  /** Open flow collections, and for each whether it is a sequence holding an open `k: v` pair. */
  private flow = 0;
  private readonly flowSeq: boolean[] = [];
  private readonly flowPair: number[] = [];
  /** Levels of single-pair mappings in flow sequences (`[a: b]`) and of `- ` in flow (an error
   * the parser reads as a mapping keyed by a sequence). */
  private pairs = 0;
  /** Columns of the open block collections, and whether each is a sequence. */
  private readonly cols: number[] = [];
  private readonly seqs: boolean[] = [];
  /** Brackets left open inside scalar or comment text: kept to the end. */
  private residue = 0;
  /** After a `]`/`}` or a quoted scalar in flow: a `:` right after is an indicator. */
  private flowKey = false;
  exceeded = false;

  constructor(
    private readonly text: string,
    private readonly limit: number,
  ) {
    this.n = text.length;
  }

  private at(k: number): number {
    return this.text.charCodeAt(k);
  }

  private check(extra = 0): void {
    if (this.cols.length + this.flow + this.pairs + this.residue + extra > this.limit)
      this.exceeded = true;
  }

  run(): boolean {
    while (this.i < this.n && !this.exceeded) {
      if (this.flow > 0) this.flowToken();
      else this.lineStart();
    }
    return this.exceeded;
  }

  /** Counts brackets in [from, to) that the parser reads as text; keeps what stays open. */
  private textSpan(from: number, to: number): void {
    let open = 0;
    for (let k = from; k < to; k++) {
      const c = this.at(k);
      if (c === LBRACKET || c === LBRACE) {
        open++;
        if (this.cols.length + this.flow + this.pairs + this.residue + open > this.limit) {
          this.exceeded = true;
          return;
        }
      } else if ((c === RBRACKET || c === RBRACE) && open > 0) open--;
    }
    this.residue += open;
    this.check();
  }

  private lineEnd(from: number): number {
    const e = this.text.indexOf('\n', from);
    return e === -1 ? this.n : e;
  }

  /** A comment from `#` to the end of the line. */
  private comment(): void {
    const e = this.lineEnd(this.i);
    this.textSpan(this.i, e);
    this.i = e;
  }

  /** A quoted scalar starting at this.i; leaves this.i after its closing quote. */
  private quoted(): void {
    const q = this.at(this.i);
    let k = this.i + 1;
    for (; k < this.n; k++) {
      const c = this.at(k);
      if (q === DQUOTE && c === BACKSLASH) k++;
      else if (c === q) {
        if (q === SQUOTE && this.at(k + 1) === SQUOTE) k++;
        else break;
      }
    }
    const end = Math.min(k + 1, this.n);
    this.textSpan(this.i, end);
    this.i = end;
  }

  /** Tags and anchors before a node, and the spaces after them. */
  private properties(): void {
    for (;;) {
      const c = this.at(this.i);
      if (c !== BANG && c !== AMP) return;
      while (this.i < this.n && !isEmpty(this.at(this.i)) && !isFlowIndicator(this.at(this.i)))
        this.i++;
      this.skipBlanks();
    }
  }

  private skipBlanks(): void {
    while (isBlank(this.at(this.i))) this.i++;
  }

  /** Where the current line begins, found by a forward scan (linear over the whole text). */
  private lineBegin = 0;
  private scannedTo = 0;

  private column(): number {
    for (let k = this.scannedTo; k < this.i; k++) if (this.at(k) === LF) this.lineBegin = k + 1;
    this.scannedTo = this.i;
    return this.i - this.lineBegin;
  }

  /** Opens a block collection at `col` (a sequence for `seq`), popping what `col` closes. */
  private pushBlock(col: number, seq: boolean): void {
    const top = this.cols.length - 1;
    if (top >= 0 && this.cols[top] === col && this.seqs[top] === seq) return;
    this.cols.push(col);
    this.seqs.push(seq);
    this.check();
  }

  /** The start of a line in block context: indentation, then the line's first node. */
  private lineStart(): void {
    const lineBegin = this.i;
    this.skipBlanks();
    const c = this.at(this.i);
    if (c === LF || c === CR) {
      this.i++;
      return;
    }
    if (Number.isNaN(c)) return;
    const indent = this.i - lineBegin;
    if (c === HASH) {
      this.comment();
      return;
    }
    if (indent === 0) {
      if (c === PERCENT) {
        this.i = this.lineEnd(this.i);
        return;
      }
      if ((c === DASH || c === DOT) && this.text.startsWith(c === DASH ? '---' : '...', this.i)) {
        if (isEmpty(this.at(this.i + 3))) {
          this.cols.length = 0;
          this.seqs.length = 0;
          this.i += 3;
          this.skipBlanks();
          this.blockNode(true);
          return;
        }
      }
    }
    // Close the collections this line is outside of.
    while (this.cols.length > 0 && (this.cols[this.cols.length - 1] as number) > indent) {
      this.cols.pop();
      this.seqs.pop();
    }
    const isSeq = c === DASH && isEmpty(this.at(this.i + 1));
    const top = this.cols.length - 1;
    // A mapping key after a sequence at the same column ends that sequence.
    if (!isSeq && top >= 0 && this.cols[top] === indent && this.seqs[top]) {
      this.cols.pop();
      this.seqs.pop();
    }
    this.blockNode(true);
  }

  /** A node in block context at this.i; `opens` when it may begin a collection here. */
  private blockNode(opens: boolean): void {
    // The parser's indentation of what opens here: the line's, moved on by leading indicators.
    let indent = this.column();
    let leading = true;
    for (;;) {
      if (this.exceeded) return;
      const before = this.i;
      this.properties();
      if (this.i !== before) leading = false;
      const c = this.at(this.i);
      if (Number.isNaN(c) || c === LF || c === CR) {
        if (!Number.isNaN(c)) this.i++;
        return;
      }
      if ((c === DASH || c === QUESTION || c === COLON) && isEmpty(this.at(this.i + 1))) {
        this.pushBlock(indent, c === DASH);
        this.i++;
        this.skipBlanks();
        if (leading) indent = this.column();
        opens = true;
        continue;
      }
      leading = false;
      if (c === HASH) return this.comment();
      if (c === LBRACKET || c === LBRACE) return this.openFlow(c);
      if (c === RBRACKET || c === RBRACE || c === STAR) {
        // A stray closer (an error token) or an alias: what follows starts a node again.
        this.i++;
        if (c === STAR)
          while (this.i < this.n && !isEmpty(this.at(this.i)) && !isFlowIndicator(this.at(this.i)))
            this.i++;
        this.skipBlanks();
        continue;
      }
      if (c === PIPE || c === GT) return this.blockScalar();
      if (opens) this.pushBlock(indent, false);
      if (c === DQUOTE || c === SQUOTE) this.quoted();
      else this.plainInBlock();
      if (this.exceeded) return;
      // After a key: `: ` and the value on the same line.
      this.skipBlanks();
      const d = this.at(this.i);
      if (d === COLON && isEmpty(this.at(this.i + 1))) {
        this.i++;
        this.skipBlanks();
        opens = false;
        continue;
      }
      if (d === HASH) return this.comment();
      if (!Number.isNaN(d) && d !== LF && d !== CR) {
        // Anything else on the line is text to the parser; count its brackets as such.
        const e = this.lineEnd(this.i);
        this.textSpan(this.i, e);
        this.i = e;
      }
      return;
    }
  }

  /** A plain scalar in block context: up to `: `, ` #` or the end of the line. */
  private plainInBlock(): void {
    const from = this.i;
    let k = this.i;
    for (; k < this.n; k++) {
      const c = this.at(k);
      if (c === LF || c === CR) break;
      if (c === COLON && isEmpty(this.at(k + 1))) break;
      if (c === HASH && k > from && isBlank(this.at(k - 1))) break;
    }
    this.textSpan(from, k);
    this.i = k;
  }

  /** `|` or `>`: the header line, then every line indented at least as the first one. */
  private blockScalar(): void {
    const parent = this.cols.length > 0 ? (this.cols[this.cols.length - 1] as number) : -1;
    let line = this.lineEnd(this.i) + 1;
    const from = this.i;
    let threshold = -1;
    while (line < this.n) {
      let k = line;
      while (this.at(k) === SPACE) k++;
      const c = this.at(k);
      const indent = k - line;
      const blank = c === LF || c === CR || Number.isNaN(c);
      if (!blank) {
        if (threshold === -1) {
          if (indent <= parent) break;
          threshold = indent;
        }
        if (indent < threshold) break;
        if (
          indent === 0 &&
          (this.text.startsWith('---', k) || this.text.startsWith('...', k)) &&
          isEmpty(this.at(k + 3))
        )
          break;
      }
      line = this.lineEnd(k) + 1;
    }
    const end = Math.min(line, this.n);
    this.textSpan(from, end);
    this.i = end;
  }

  /** One token inside flow collections. */
  private flowToken(): void {
    const c = this.at(this.i);
    if (isEmpty(c) || c === COMMA) {
      if (c === COMMA) {
        this.flowKey = false;
        this.closePair();
      }
      this.i++;
      return;
    }
    if (c === HASH) return this.comment();
    if (c === BANG || c === AMP || c === STAR) {
      this.i++;
      while (this.i < this.n && !isEmpty(this.at(this.i)) && !isFlowIndicator(this.at(this.i)))
        this.i++;
      return;
    }
    const next = this.at(this.i + 1);
    if (
      (c === DASH || c === QUESTION || c === COLON) &&
      (isEmpty(next) || isFlowIndicator(next) || (c === COLON && this.flowKey))
    ) {
      this.flowKey = false;
      // A key or value indicator straight inside a sequence makes a one-pair mapping; a
      // `- ` (an error in flow) is read as a nested sequence.
      const top = this.flow - 1;
      const extra = c === DASH ? 2 : this.flowSeq[top] ? 1 : 0;
      const had = this.flowPair[top] as number;
      if (extra > had) {
        this.flowPair[top] = extra;
        this.pairs += extra - had;
        this.check();
      }
      this.i++;
      return;
    }
    if (c === LBRACKET || c === LBRACE) return this.openFlow(c);
    if (c === RBRACKET || c === RBRACE) {
      // A closer of the other kind is an error the parser skips: it closes nothing here.
      if ((c === RBRACKET) !== this.flowSeq[this.flow - 1]) {
        this.i++;
        return;
      }
      this.closePair();
      this.flow--;
      this.flowSeq.pop();
      this.flowPair.pop();
      this.flowKey = true;
      this.i++;
      if (this.flow === 0) this.afterFlow();
      return;
    }
    if (c === DQUOTE || c === SQUOTE) {
      this.quoted();
      this.flowKey = true;
      return;
    }
    // A plain scalar: it cannot hold flow indicators, so it has no brackets to count.
    this.flowKey = false;
    let k = this.i + 1;
    for (; k < this.n; k++) {
      const d = this.at(k);
      if (isFlowIndicator(d)) break;
      if (d === COLON) {
        const e = this.at(k + 1);
        if (isEmpty(e) || isFlowIndicator(e)) break;
      }
      if (d === HASH && isEmpty(this.at(k - 1))) break;
    }
    this.i = k;
  }

  private openFlow(c: number): void {
    this.flow++;
    this.flowSeq.push(c === LBRACKET);
    this.flowPair.push(0);
    this.flowKey = false;
    this.i++;
    this.check();
  }

  private closePair(): void {
    const top = this.flow - 1;
    this.pairs -= this.flowPair[top] ?? 0;
    this.flowPair[top] = 0;
  }

  /** The rest of a line after a flow collection closed in block context. */
  private afterFlow(): void {
    this.skipBlanks();
    const d = this.at(this.i);
    if (d === COLON && isEmpty(this.at(this.i + 1))) {
      this.i++;
      this.skipBlanks();
      this.blockNode(false);
      return;
    }
    if (d === HASH) return this.comment();
    if (!Number.isNaN(d) && d !== LF && d !== CR) {
      const e = this.lineEnd(this.i);
      this.textSpan(this.i, e);
      this.i = e;
    }
  }
}
