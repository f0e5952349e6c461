/**
 * The one place where a CRD version's openAPIV3Schema becomes a checker for the face: lib's
 * compileCrdSchema (structural checks, ajv validation with Kubernetes' field errors, unknown
 * fields, pruning, defaulting, merge metadata for apply).
 */
import type { FieldError } from './field-errors.js';
import type { MapSchema } from './merge-schema.js';
import { compileCrdSchema } from './schema.js';
import type { KubeObject, SchemaChecker } from './types.js';

export interface CompiledSchema extends SchemaChecker {
  validate(obj: KubeObject): FieldError[];
  readonly mergeSchema: MapSchema;
}

/** Compiles a schema; throws (422 Invalid) when it is not a valid structural schema. */
export function compileSchema(
  schema: Record<string, unknown>,
  schemaPath?: string,
): CompiledSchema {
  const c = compileCrdSchema(schema, schemaPath ? { schemaPath } : {});
  return {
    validate: (obj) => c.validate(obj),
    unknownFields: (obj) => c.unknownFields(obj),
    prune: (obj) => void c.prune(obj),
    applyDefaults: (obj) => c.applyDefaults(obj),
    mergeSchema: c.mergeSchema,
  };
}
