/** Shaped by the API's own serviceData/requestData, so never credentials; the demo's records are live. */
import type { NewEvent } from '../events/store.ts';
import { requestData, type RequestWithRelations } from '../services/change-requests.ts';
import { serviceData, type ServiceWithPlan } from '../services/present.ts';

export const serviceEvent = (type: 'service.created' | 'service.updated', service: ServiceWithPlan): NewEvent => ({
  brokerId: service.brokerId,
  type,
  mode: 'live',
  object: serviceData(service),
});

export const requestEvent = (type: 'request.created' | 'request.denied', request: RequestWithRelations): NewEvent => ({
  brokerId: request.brokerId,
  type,
  mode: 'live',
  object: requestData(request),
});
