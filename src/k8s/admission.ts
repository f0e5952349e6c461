/**
 * In-process admission: hooks that an embedding program registers, typed, run on create,
 * update, patch (as an update) and delete, after the object is built and before the
 * compare-and-swap that stores it. All mutating hooks run first (in registration order),
 * then the built-in validation, then all validating hooks. A hook rejects by throwing a
 * StatusError (any reason) or by returning a denial (403 Forbidden unless it gives a code).
 *
 *   kube.admission.mutating({
 *     name: 'default-team-label',
 *     match: { resources: ['pods'], operations: ['CREATE'] },
 *     admit(req) { req.object.metadata.labels = { team: 'core', ...req.object.metadata.labels }; },
 *   });
 */
import { KubeLibError } from './errors.js';
import { StatusError } from './status.js';
import type { KubeObject, ResourceInfo } from './types.js';

export const Operation = { CREATE: 'CREATE', UPDATE: 'UPDATE', DELETE: 'DELETE' } as const;
export type Operation = (typeof Operation)[keyof typeof Operation];

export interface AdmissionRequest<T extends KubeObject = KubeObject> {
  readonly operation: Operation;
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly kind: string;
  /** '' or 'status'. */
  readonly subresource: string;
  readonly namespace: string;
  readonly name: string;
  /** The object to store (CREATE, UPDATE). Mutating hooks may change it in place. */
  readonly object: T | undefined;
  /** The stored object (UPDATE, DELETE). Never change it. */
  readonly oldObject: T | undefined;
  readonly dryRun: boolean;
}

export interface AdmissionMatch {
  groups?: readonly string[];
  resources?: readonly string[];
  operations?: readonly Operation[];
}

export interface AdmissionDenial {
  allowed: false;
  message: string;
  /** HTTP code of the answer; 403 (Forbidden) by default. */
  code?: number;
}

export interface MutatingHook<T extends KubeObject = KubeObject> {
  name: string;
  match?: AdmissionMatch;
  /** Change `req.object` in place, or return the object to store instead. */
  // biome-ignore lint/suspicious/noConfusingVoidType: a hook that changes in place returns nothing.
  admit(req: AdmissionRequest<T>): void | T | Promise<void | T>;
}

export interface ValidatingHook<T extends KubeObject = KubeObject> {
  name: string;
  match?: AdmissionMatch;
  // biome-ignore lint/suspicious/noConfusingVoidType: a hook that allows returns nothing.
  validate(req: AdmissionRequest<T>): void | AdmissionDenial | Promise<void | AdmissionDenial>;
}

function matches(m: AdmissionMatch | undefined, req: AdmissionRequest): boolean {
  if (!m) return true;
  if (m.groups && !m.groups.includes(req.group) && !m.groups.includes('*')) return false;
  if (m.resources && !m.resources.includes(req.resource) && !m.resources.includes('*')) {
    return false;
  }
  return !m.operations || m.operations.includes(req.operation);
}

export class Admission {
  private readonly mutators: MutatingHook[] = [];
  private readonly validators: ValidatingHook[] = [];

  /** Registers a mutating hook. Returns the function that removes it. */
  mutating<T extends KubeObject = KubeObject>(hook: MutatingHook<T>): () => void {
    const h = hook as unknown as MutatingHook;
    this.mutators.push(h);
    return () => void this.mutators.splice(this.mutators.indexOf(h) >>> 0, 1);
  }

  /** Registers a validating hook. Returns the function that removes it. */
  validating<T extends KubeObject = KubeObject>(hook: ValidatingHook<T>): () => void {
    const h = hook as unknown as ValidatingHook;
    this.validators.push(h);
    return () => void this.validators.splice(this.validators.indexOf(h) >>> 0, 1);
  }

  get empty(): boolean {
    return this.mutators.length === 0 && this.validators.length === 0;
  }

  /** Runs the mutating hooks; returns the object to continue with. */
  async mutate(req: AdmissionRequest): Promise<KubeObject | undefined> {
    let obj = req.object;
    for (const h of this.mutators) {
      const r = { ...req, object: obj };
      if (!matches(h.match, r)) continue;
      const out = await this.call(h.name, () => h.admit(r));
      if (out && typeof out === 'object') obj = out;
      else obj = r.object;
    }
    return obj;
  }

  async validate(req: AdmissionRequest): Promise<void> {
    for (const h of this.validators) {
      if (!matches(h.match, req)) continue;
      const out = await this.call(h.name, () => h.validate(req));
      if (out && out.allowed === false) {
        const code = out.code ?? 403;
        const reason = code === 422 ? 'Invalid' : code === 400 ? 'BadRequest' : 'Forbidden';
        throw new StatusError(
          reason,
          `admission webhook "${h.name}" denied the request: ${out.message}`,
          undefined,
          code,
        );
      }
    }
  }

  private async call<R>(name: string, fn: () => R | Promise<R>): Promise<R> {
    try {
      return await fn();
    } catch (e) {
      if (e instanceof StatusError || e instanceof KubeLibError) throw e;
      throw new StatusError(
        'InternalError',
        `admission hook "${name}" failed: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
  }
}

/** The request for an operation on one resource. */
export function admissionRequest(
  info: ResourceInfo,
  operation: Operation,
  subresource: string,
  namespace: string,
  name: string,
  object: KubeObject | undefined,
  oldObject: KubeObject | undefined,
  dryRun: boolean,
): AdmissionRequest {
  return {
    operation,
    group: info.group,
    version: info.version,
    resource: info.resource,
    kind: info.kind,
    subresource,
    namespace,
    name,
    object,
    oldObject,
    dryRun,
  };
}
