/**
 * /openapi/v3: a root listing every served group-version with
 * a hash that changes with its content, and per group-version a document whose item paths
 * carry a `patch` operation with x-kubernetes-group-version-kind and a fieldValidation
 * parameter. That is what makes kubectl leave validation to the server (fieldValidation=
 * Strict) instead of asking for /openapi/v2, which is a 404 here.
 *
 * components.schemas holds the schemas of CRD versions only: for kinds built into kubectl a
 * schema here would make kubectl compute strategic merge patches from it rather than from
 * its own compiled-in types, and a stub schema would make those patches wrong.
 */
import { createHash } from 'node:crypto';
import { pathNotFound } from '../../k8s/status.js';
import type { ResourceInfo } from '../../k8s/types.js';
import type { Kube } from './context.js';

type Doc = Record<string, unknown>;

const param = (name: string, type: string, where = 'query') => ({
  name,
  in: where,
  schema: { type },
});
const WRITE_PARAMS = [
  param('dryRun', 'string'),
  param('fieldManager', 'string'),
  param('fieldValidation', 'string'),
];
const LIST_PARAMS = [
  'allowWatchBookmarks:boolean',
  'continue:string',
  'fieldSelector:string',
  'labelSelector:string',
  'limit:integer',
  'resourceVersion:string',
  'resourceVersionMatch:string',
  'sendInitialEvents:boolean',
  'timeoutSeconds:integer',
  'watch:boolean',
].map((s) => {
  const [n, t] = s.split(':') as [string, string];
  return param(n, t);
});
const OK = { 200: { description: 'OK' } };

function op(
  action: string,
  info: ResourceInfo,
  id: string,
  params: unknown[],
  extra: Doc = {},
): Doc {
  return {
    operationId: `${action}${id}`,
    'x-kubernetes-action': action,
    'x-kubernetes-group-version-kind': {
      group: info.group,
      version: info.version,
      kind: info.kind,
    },
    parameters: params,
    responses: OK,
    ...extra,
  };
}

function pathsOf(info: ResourceInfo): Record<string, Doc> {
  const base = info.group === '' ? `/api/${info.version}` : `/apis/${info.group}/${info.version}`;
  const coll =
    info.scope === 'Namespaced'
      ? `${base}/namespaces/{namespace}/${info.resource}`
      : `${base}/${info.resource}`;
  const id = info.kind;
  const patchParams = [...WRITE_PARAMS, param('force', 'boolean')];
  const item: Doc = {
    get: op('get', info, `Namespaced${id}`, []),
    put: op('put', info, `Replace${id}`, WRITE_PARAMS),
    patch: op('patch', info, id, patchParams),
    delete: op('delete', info, id, [param('dryRun', 'string')]),
  };
  const paths: Record<string, Doc> = {
    [coll]: {
      get: op('list', info, id, LIST_PARAMS),
      post: op('post', info, `Create${id}`, WRITE_PARAMS),
      delete: op('deletecollection', info, `Collection${id}`, LIST_PARAMS),
    },
    [`${coll}/{name}`]: item,
  };
  if (info.statusSubresource) {
    paths[`${coll}/{name}/status`] = {
      get: op('get', info, `${id}Status`, []),
      put: op('put', info, `Replace${id}Status`, WRITE_PARAMS),
      patch: op('patch', info, `${id}Status`, patchParams),
    };
  }
  return paths;
}

function schemaName(info: ResourceInfo): string {
  const g = info.group.split('.').reverse().join('.');
  return `${g}.${info.version}.${info.kind}`;
}

export class OpenApi {
  private cacheGen = -1;
  private docs = new Map<string, { text: string; hash: string }>();
  private rootText = '';

  constructor(private readonly kube: Kube) {}

  private rebuild(): void {
    const { registry } = this.kube;
    if (this.cacheGen === registry.generation) return;
    this.docs.clear();
    const root: Record<string, { serverRelativeURL: string }> = {};
    for (const g of registry.groups()) {
      for (const version of g.versions) {
        const key = g.group === '' ? `api/${version}` : `apis/${g.group}/${version}`;
        const infos = registry.resources(g.group, version);
        const paths: Record<string, Doc> = {};
        const schemas: Record<string, unknown> = {};
        for (const info of infos) {
          Object.assign(paths, pathsOf(info));
          if (info.crd && info.openApiSchema) {
            schemas[schemaName(info)] = {
              ...info.openApiSchema,
              'x-kubernetes-group-version-kind': [
                { group: info.group, version: info.version, kind: info.kind },
              ],
            };
          }
        }
        const doc = {
          openapi: '3.0.0',
          info: { title: 'Kubernetes', version: this.kube.options.gitVersion },
          paths,
          components: { schemas },
        };
        const text = JSON.stringify(doc);
        const hash = createHash('sha512').update(text).digest('hex').slice(0, 32).toUpperCase();
        this.docs.set(key, { text, hash });
        root[key] = { serverRelativeURL: `/openapi/v3/${key}?hash=${hash}` };
      }
    }
    this.rootText = JSON.stringify({ paths: root });
    this.cacheGen = registry.generation;
  }

  root(): string {
    this.rebuild();
    return this.rootText;
  }

  groupVersion(group: string, version: string): string {
    this.rebuild();
    const key = group === '' ? `api/${version}` : `apis/${group}/${version}`;
    const doc = this.docs.get(key);
    if (!doc) throw pathNotFound();
    return doc.text;
  }
}
