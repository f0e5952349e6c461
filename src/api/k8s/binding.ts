/**
 * The pods/binding subresource: `POST /api/v1/namespaces/NS/pods/NAME/binding` with a v1
 * Binding assigns the pod to a node, as kube-apiserver does for a scheduler: spec.nodeName
 * is set once (409 Conflict if the pod is already bound or being deleted), the Binding's
 * annotations are copied onto the pod, and the PodScheduled condition becomes True — all in
 * one compare-and-swap write. The answer is a 201 Success Status.
 */

import { invalidObject } from '../../k8s/errors.js';
import { type FieldError, invalid, notSupported, required } from '../../k8s/field-errors.js';
import { isJsonObject } from '../../k8s/json.js';
import { timestamp } from '../../k8s/meta.js';
import { badRequest, conflict, methodNotAllowed } from '../../k8s/status.js';
import { parseObjectBody, readBody } from './body.js';
import { type Kube, parseDryRun, type ResourceRequest } from './context.js';
import { managerOf } from './field-manager.js';
import { sendJson } from './respond.js';
import { type UpdateSpec, updateObject } from './write.js';

type Rec = Record<string, unknown>;

interface Binding {
  node: string;
  annotations: Record<string, string>;
  uid: string | undefined;
}

/** Checks a Binding body as ValidatePodBinding does; 400 for a name or namespace mismatch. */
export function decodeBinding(body: Rec, name: string, namespace: string): Binding {
  const meta = isJsonObject(body.metadata) ? body.metadata : {};
  if (typeof meta.name === 'string' && meta.name !== '' && meta.name !== name) {
    throw badRequest('name in URL does not match name in Binding object');
  }
  if (typeof meta.namespace === 'string' && meta.namespace !== '' && meta.namespace !== namespace) {
    throw badRequest(
      'the namespace of the provided object does not match the namespace sent on the request',
    );
  }
  const errs: FieldError[] = [];
  const target = isJsonObject(body.target) ? body.target : undefined;
  const kind = target?.kind;
  if (kind !== undefined && kind !== '' && kind !== 'Node') {
    errs.push(notSupported('target.kind', kind, ['Node', '<empty>']));
  }
  const node = target?.name;
  if (typeof node !== 'string' || node === '') errs.push(required('target.name'));
  const annotations: Record<string, string> = {};
  if (meta.annotations !== undefined) {
    if (!isJsonObject(meta.annotations)) {
      errs.push(invalid('metadata.annotations', meta.annotations, 'must be a map of strings'));
    } else {
      for (const [k, v] of Object.entries(meta.annotations)) {
        if (typeof v !== 'string')
          errs.push(invalid(`metadata.annotations[${k}]`, v, 'must be a string'));
        else annotations[k] = v;
      }
    }
  }
  if (errs.length > 0) throw invalidObject('', 'Binding', name, errs);
  const uid = typeof meta.uid === 'string' && meta.uid !== '' ? meta.uid : undefined;
  return { node: node as string, annotations, uid };
}

/** The pod's conditions with PodScheduled=True (its transition time kept if it was True). */
function scheduledConditions(conditions: unknown, now: string): Rec[] {
  const list = Array.isArray(conditions) ? (conditions.filter(isJsonObject) as Rec[]) : [];
  const old = list.find((c) => c.type === 'PodScheduled');
  const cond: Rec = {
    type: 'PodScheduled',
    status: 'True',
    lastProbeTime: null,
    lastTransitionTime:
      old?.status === 'True' && typeof old.lastTransitionTime === 'string'
        ? old.lastTransitionTime
        : now,
  };
  return old ? list.map((c) => (c === old ? cond : c)) : [...list, cond];
}

export async function handleBinding(kube: Kube, rr: ResourceRequest): Promise<void> {
  if (rr.req.method !== 'POST') throw methodNotAllowed();
  const name = rr.path.name ?? '';
  const namespace = rr.path.namespace ?? '';
  const body = parseObjectBody(
    await readBody(rr.req, kube.options.maxBodyBytes, kube.options.readBodyTimeoutMs),
    rr.req.headers['content-type'],
  );
  const binding = decodeBinding(body, name, namespace);
  const subject = { group: '', resource: 'pods', name };
  const spec: UpdateSpec = {
    info: rr.info,
    namespace,
    name,
    subresource: undefined,
    dryRun: parseDryRun(rr.query),
    manager: managerOf(rr.req, rr.query),
    transform: (cur) => {
      const podSpec = (isJsonObject(cur.spec) ? cur.spec : {}) as Rec;
      if (binding.uid !== undefined && cur.metadata.uid !== binding.uid) {
        throw conflict(
          subject,
          `Precondition failed: UID in precondition: ${binding.uid}, UID in object meta: ${cur.metadata.uid ?? ''}`,
        );
      }
      if (cur.metadata.deletionTimestamp !== undefined) {
        throw conflict(subject, `pod ${name} is being deleted, cannot be assigned to a host`);
      }
      if (typeof podSpec.nodeName === 'string' && podSpec.nodeName !== '') {
        throw conflict(subject, `pod ${name} is already assigned to node "${podSpec.nodeName}"`);
      }
      cur.spec = { ...podSpec, nodeName: binding.node };
      if (Object.keys(binding.annotations).length > 0) {
        cur.metadata.annotations = { ...cur.metadata.annotations, ...binding.annotations };
      }
      // The main resource's update keeps the stored status; the status this write stores
      // is computed here, from the same current object, on every attempt.
      const status = (isJsonObject(cur.status) ? cur.status : {}) as Rec;
      spec.status = {
        ...status,
        conditions: scheduledConditions(status.conditions, timestamp(kube.options.now())),
      };
      return cur;
    },
  };
  await updateObject(kube, spec);
  sendJson(rr.res, 201, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Success',
    code: 201,
  });
}
