/**
 * The webhook endpoint operations over HTTP: create, list, detail, update, delete, rotate the
 * secret, ping, send an example event, recover failed deliveries, deliveries and their stats. The key's mode chooses the endpoints it acts on (live, or the sandbox's test
 * endpoints); every answer that shows a secret is made here from the use case's, nowhere else.
 */
import type { Router } from 'express';
import type { Config } from '../config.ts';
import type { Contract } from '../http/contract.ts';
import { missingParameter } from '../http/errors.ts';
import { operation } from '../http/operation.ts';
import { DEFAULT_LIMIT, instantParam, intParam, pageParams, textParam } from '../http/params.ts';
import type { RegisterRoutes } from '../http/resource.ts';
import type { ByMode } from '../shared/caller.ts';
import { statsRange } from '../shared/stats-range.ts';
import { eventExamples } from './examples.ts';
import type { EndpointChange } from './endpoint-store.ts';
import { checkEventTypes, checkSince, checkUrl, webhookEndpoints, type EndpointDeps, type WebhookEndpointUseCases } from './endpoint-use-cases.ts';
import { sandboxEndpoints } from './sandbox.ts';

/** What the webhook endpoint operations are built from. */
type EndpointRouteDeps = Pick<EndpointDeps, 'prisma' | 'credentials'> & {
  resolveHost?: EndpointDeps['resolve'];
  config: Pick<Config, 'webhookAllowPrivateUrls' | 'webhookEndpointsPerBroker'>;
  contract: Contract;
};

export function webhookEndpointUseCases(deps: EndpointRouteDeps): ByMode<WebhookEndpointUseCases> {
  const parts: EndpointDeps = {
    prisma: deps.prisma,
    credentials: deps.credentials,
    destinations: { allowPrivate: deps.config.webhookAllowPrivateUrls },
    endpointsPerBroker: deps.config.webhookEndpointsPerBroker,
    examples: eventExamples(deps.contract.document),
  };
  return { live: webhookEndpoints(parts, 'live'), sandbox: sandboxEndpoints(webhookEndpoints(parts, 'test')) };
}

/** A description: trimmed text without control characters; `null` or empty is none. */
function descriptionParam(value: string | null | undefined): string | null | undefined {
  if (value === undefined) return undefined;
  return textParam(value?.trim(), 'description', 'body') ?? null;
}

export const registerWebhookEndpointRoutes: RegisterRoutes<EndpointRouteDeps> = (router, deps) => {
  const useCases = webhookEndpointUseCases(deps);
  const destinations = { destinations: { allowPrivate: deps.config.webhookAllowPrivateUrls }, ...(deps.resolveHost && { resolve: deps.resolveHost }) };
  const { contract } = deps;

  // POST /api/v1/webhook-endpoints
  operation(router, contract, 'createWebhookEndpoint', {
    useCases,
    async validate({ body }) {
      const url = textParam(body.url, 'url', 'body');
      if (url === undefined) throw missingParameter(['url']);
      const events = checkEventTypes(body.events ?? []);
      const description = descriptionParam(body.description) ?? null;
      return { url: await checkUrl(url, destinations), events, description };
    },
    async handle(input, { caller, useCases }) {
      return { status: 200, data: await useCases.create(caller, input) };
    },
  });

  // GET /api/v1/webhook-endpoints
  operation(router, contract, 'listWebhookEndpoints', {
    useCases,
    validate: ({ query }) => pageParams(query),
    async handle(page, { caller, useCases }) {
      const { data, pagination } = await useCases.list(caller, page);
      return { status: 200, data, pagination };
    },
  });

  // GET /api/v1/webhook-endpoints/{endpoint_id}
  operation(router, contract, 'getWebhookEndpoint', {
    useCases,
    validate: ({ params }) => params.endpoint_id,
    async handle(id, { caller, useCases }) {
      return { status: 200, data: await useCases.get(caller, id) };
    },
  });

  // POST /api/v1/webhook-endpoints/{endpoint_id}
  operation(router, contract, 'updateWebhookEndpoint', {
    useCases,
    async validate({ params, body }) {
      const url = textParam(body.url, 'url', 'body');
      const change: EndpointChange = {
        url: url === undefined ? undefined : await checkUrl(url, destinations),
        events: body.events === undefined ? undefined : checkEventTypes(body.events),
        description: descriptionParam(body.description),
        status: body.status,
      };
      return { id: params.endpoint_id, change };
    },
    async handle({ id, change }, { caller, useCases }) {
      return { status: 200, data: await useCases.update(caller, id, change) };
    },
  });

  registerEndpointReports(router, contract, useCases);
  registerEndpointActions(router, contract, useCases);
};

/** GET /api/v1/webhook-endpoints/{endpoint_id}/deliveries and /stats: what was sent to an endpoint. */
function registerEndpointReports(router: Router, contract: Contract, useCases: ByMode<WebhookEndpointUseCases>): void {
  // GET /api/v1/webhook-endpoints/{endpoint_id}/deliveries
  operation(router, contract, 'listWebhookEndpointDeliveries', {
    useCases,
    validate: ({ params, query }) => ({
      id: params.endpoint_id,
      query: { status: query.status, limit: intParam(query.limit, DEFAULT_LIMIT), startingAfter: query.starting_after },
    }),
    async handle({ id, query }, { caller, useCases }) {
      const { data, pagination } = await useCases.deliveries(caller, id, query);
      return { status: 200, data, pagination };
    },
  });

  // GET /api/v1/webhook-endpoints/{endpoint_id}/stats
  operation(router, contract, 'getWebhookEndpointStats', {
    useCases,
    validate: ({ params, query }) => ({
      id: params.endpoint_id,
      range: statsRange(query.interval ?? 'hour', instantParam(query.created_gte, 'created_gte'), instantParam(query.created_lt, 'created_lt'), new Date()),
    }),
    async handle({ id, range }, { caller, useCases }) {
      return { status: 200, data: await useCases.stats(caller, id, range) };
    },
  });
}

/** POST /api/v1/webhook-endpoints/{endpoint_id}/delete, /rotate-secret, /ping, /send-example and /recover. */
function registerEndpointActions(router: Router, contract: Contract, useCases: ByMode<WebhookEndpointUseCases>): void {
  operation(router, contract, 'deleteWebhookEndpoint', {
    useCases,
    validate: ({ params }) => params.endpoint_id,
    async handle(id, { caller, useCases }) {
      return { status: 200, data: await useCases.remove(caller, id) };
    },
  });
  operation(router, contract, 'rotateWebhookEndpointSecret', {
    useCases,
    validate: ({ params }) => params.endpoint_id,
    async handle(id, { caller, useCases }) {
      return { status: 200, data: await useCases.rotateSecret(caller, id) };
    },
  });
  operation(router, contract, 'pingWebhookEndpoint', {
    useCases,
    validate: ({ params }) => params.endpoint_id,
    async handle(id, { caller, useCases }) {
      return { status: 200, data: await useCases.ping(caller, id) };
    },
  });
  operation(router, contract, 'sendExampleEvent', {
    useCases,
    validate: ({ params, body }) => ({ id: params.endpoint_id, type: body.type }),
    async handle({ id, type }, { caller, useCases }) {
      return { status: 200, data: await useCases.sendExample(caller, id, type) };
    },
  });
  operation(router, contract, 'recoverWebhookEndpoint', {
    useCases,
    validate: ({ params, body }) => ({ id: params.endpoint_id, since: checkSince(body.since, new Date()) }),
    async handle({ id, since }, { caller, useCases }) {
      return { status: 200, data: await useCases.recover(caller, id, since) };
    },
  });
}
