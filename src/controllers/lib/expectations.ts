/**
 * Expectations (client-go's ControllerExpectations): after a controller creates or deletes
 * dependants, its informer has not seen them yet, and a reconcile reading the cache would
 * count wrong and create or delete again. So each owner key remembers the dependants it
 * wrote and is not trusted to count until the informer has seen each of them (or a timeout
 * passed, if an event was lost).
 */

const TIMEOUT_MS = 5 * 60_000;

interface Pending {
  /** Creations not seen yet (a count: created names are known only after the answer). */
  adds: number;
  deletes: Set<string>;
  since: number;
}

export class Expectations {
  private readonly byOwner = new Map<string, Pending>();

  constructor(private readonly now: () => number = Date.now) {}

  private entry(owner: string): Pending {
    let e = this.byOwner.get(owner);
    if (!e) this.byOwner.set(owner, (e = { adds: 0, deletes: new Set(), since: this.now() }));
    return e;
  }

  /** Call before issuing the creates. */
  expectAdds(owner: string, n: number): void {
    const e = this.entry(owner);
    e.adds += n;
    e.since = this.now();
  }

  expectDelete(owner: string, key: string): void {
    const e = this.entry(owner);
    e.deletes.add(key);
    e.since = this.now();
  }

  /** The informer saw a dependant of `owner` appear (or a create failed). */
  observedAdd(owner: string): void {
    const e = this.byOwner.get(owner);
    if (e && e.adds > 0) e.adds--;
  }

  /** The informer saw `key` go (or begin deletion); true when it was expected. */
  observedDelete(owner: string, key: string): boolean {
    return this.byOwner.get(owner)?.deletes.delete(key) ?? false;
  }

  satisfied(owner: string): boolean {
    const e = this.byOwner.get(owner);
    if (!e) return true;
    if (e.adds === 0 && e.deletes.size === 0) return true;
    return this.now() - e.since > TIMEOUT_MS;
  }

  forgetOwner(owner: string): void {
    this.byOwner.delete(owner);
  }
}
