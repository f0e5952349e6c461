/**
 * The vocabulary of the Kubernetes face: objects as JSON, kinds and how they are served.
 *
 * Objects are plain JSON values. The face never trusts their shape: everything read from a
 * request body is checked before use, and everything read from the store was written by
 * this face (so it is a JSON object with `metadata`).
 */

import type { ObjectMeta } from '../wire/k8s.js';
import type { FieldError } from './field-errors.js';
import type { MapSchema } from './merge-schema.js';

export type NameRule = 'subdomain' | 'label' | 'dns1035';

export type { ObjectMeta };

/** Any Kubernetes object: apiVersion, kind, metadata, and the kind's own fields. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export const Scope = { Namespaced: 'Namespaced', Cluster: 'Cluster' } as const;
export type Scope = (typeof Scope)[keyof typeof Scope];

/** The verbs a resource serves (discovery lists them; routes check them). */
export const ALL_VERBS = [
  'create',
  'delete',
  'deletecollection',
  'get',
  'list',
  'patch',
  'update',
  'watch',
] as const;
export type Verb = (typeof ALL_VERBS)[number];

/** A field a field selector may name, with the function that reads it from an object. */
export type FieldGetter = (obj: KubeObject) => string;

/** A validator of a kind's objects: the field errors (empty when valid). */
export type KindValidator = (obj: KubeObject, old: KubeObject | undefined) => FieldError[];

/**
 * What the face knows about one served group/version/resource. Built-in kinds come from
 * builtins.ts; CRDs add one per served version.
 */
export interface ResourceInfo {
  /** '' for the core group. */
  readonly group: string;
  readonly version: string;
  /** The plural resource name used in paths. */
  readonly resource: string;
  readonly kind: string;
  readonly listKind: string;
  readonly singular: string;
  readonly scope: Scope;
  readonly shortNames: readonly string[];
  readonly categories: readonly string[];
  readonly verbs: readonly Verb[];
  /** The /status subresource is served; the main resource then ignores status changes. */
  readonly statusSubresource: boolean;
  /** /scale (autoscaling/v1 Scale over spec.replicas), for workload kinds. */
  readonly scaleSubresource: boolean;
  /** metadata.generation is kept and bumped when anything but metadata and status changes. */
  readonly generation: boolean;
  /** Strategic merge patch is served (kinds built into kubectl only). */
  readonly strategicMerge: boolean;
  /** Extra field-selector labels beyond metadata.name and metadata.namespace. */
  readonly fields: Readonly<Record<string, FieldGetter>>;
  /**
   * Fields (of `fields`) the cache indexes by value, so that a list or watch selecting one
   * value (spec.nodeName=n1) looks only at the matching objects and watchers.
   */
  readonly indexedFields: readonly string[];
  /** Top-level fields a built-in object may carry (for strict decoding); absent: no check. */
  readonly topLevelFields?: readonly string[];
  /** The name rule: DNS-1123 subdomain (most kinds), label (namespaces), DNS-1035 (services). */
  readonly nameRule: NameRule;
  /** Kind-specific validation (built-ins: a few required fields; CRDs: the schema). */
  readonly validate?: KindValidator;
  /** For CRD versions: unknown-field detection and pruning by the schema. */
  readonly schema?: SchemaChecker;
  /** Set for kinds defined by a CustomResourceDefinition (its metadata.name). */
  readonly crd?: string;
  /**
   * Merge metadata (keyed lists, sets, atomic maps) for server-side apply and managedFields:
   * the strategic-merge schema of a built-in kind, a CRD version's from its schema.
   */
  readonly mergeSchema?: MapSchema;
  /** A CRD version's openAPIV3Schema (served in /openapi/v3). */
  readonly openApiSchema?: Record<string, unknown>;
  /** Table columns beyond Name and Age (kinds with a printer). */
  readonly printer?: Printer;
}

/** Unknown-field handling for a schema: the paths of unknown fields, and pruning them. */
export interface SchemaChecker {
  /** The dotted paths (spec.bogus) of fields the schema does not know. */
  unknownFields(obj: KubeObject): string[];
  /** Removes the fields the schema does not know, in place. */
  prune(obj: KubeObject): void;
  /** Sets the schema's defaults, in place. */
  applyDefaults?(obj: KubeObject): void;
}

/** A Table printer: column definitions and the cells of one object. */
export interface Printer {
  readonly columns: readonly TableColumn[];
  cells(obj: KubeObject, nowMs: number): unknown[];
}

export interface TableColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  format: string;
  description: string;
  priority: number;
}

/** The storage segment of a group in keys: `core` for the core group. */
export function storageGroup(group: string): string {
  return group === '' ? 'core' : group;
}

/** `v1` for core, `apps/v1` otherwise. */
export function apiVersionOf(info: { group: string; version: string }): string {
  return info.group === '' ? info.version : `${info.group}/${info.version}`;
}

/** `pods` for core, `deployments.apps` otherwise: how Kubernetes names a resource in messages. */
export function qualifiedResource(info: { group: string; resource: string }): string {
  return info.group === '' ? info.resource : `${info.resource}.${info.group}`;
}
