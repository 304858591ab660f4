/** Shaped by the API's own serviceData/requestData, so never credentials; the demo's records are live. */
import { previousAttributes } from '../events/previous-attributes.ts';
import type { NewEvent } from '../events/store.ts';
import { requestData, type RequestWithRelations } from '../services/change-requests.ts';
import { serviceData, type ServiceWithPlan } from '../services/present.ts';

/** `before`: the record as it stood before an update, for the event's `previous_attributes` (none for a creation). */
function event(brokerId: string, type: NewEvent['type'], object: object, before: object | undefined): NewEvent {
  return { brokerId, type, mode: 'live', object, ...(before && { previousAttributes: previousAttributes(before, object) }) };
}

export function serviceEvent(type: 'service.created', service: ServiceWithPlan): NewEvent;
export function serviceEvent(type: 'service.updated', service: ServiceWithPlan, before: ServiceWithPlan): NewEvent;
export function serviceEvent(type: 'service.created' | 'service.updated', service: ServiceWithPlan, before?: ServiceWithPlan): NewEvent {
  return event(service.brokerId, type, serviceData(service), before && serviceData(before));
}

export function requestEvent(type: 'request.created', request: RequestWithRelations): NewEvent;
export function requestEvent(type: 'request.denied', request: RequestWithRelations, before: RequestWithRelations): NewEvent;
export function requestEvent(type: 'request.created' | 'request.denied', request: RequestWithRelations, before?: RequestWithRelations): NewEvent {
  return event(request.brokerId, type, requestData(request), before && requestData(before));
}
