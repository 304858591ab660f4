import type { Router } from 'express';
import type { Contract } from '../http/contract.ts';
import { invalidParameter, missingParameter } from '../http/errors.ts';
import { boolParam, intParam, pageParams, textParam } from '../http/params.ts';
import { operation, serialized, type SerializedReply } from '../http/operation.ts';
import { DATE_OR_DATE_TIME_REASON } from '../http/validation.ts';
import type { RegisterRoutes } from '../http/resource.ts';
import type { ByMode } from '../shared/caller.ts';
import { isoInstant } from '../shared/dates.ts';
import { isBlank } from '../shared/text.ts';
import type { BillingCycle, ServiceData, ServiceStatus } from './present.ts';
import { sandboxServices } from './sandbox.ts';
import { liveServices, type Page, type ServiceDeps, type ServiceUseCases } from './use-cases.ts';

/** What the service operations are built from: the use cases' parts, with the mail queue's `sendMail` among the jobs. */
type ServiceRouteDeps = Omit<ServiceDeps, 'sendMail'> & { jobs: Pick<ServiceDeps, 'sendMail'>; contract: Contract };

/** Numbers above what the database stores name no service: 404 for a live key, echoed by the sandbox. */
export function serviceNumberParam(params: { service_number?: unknown }): number {
  return intParam(params.service_number, NaN);
}

/** The validator has already checked the form; without a zone it is UTC. */
export function parseInstant(value: string): Date {
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) return new Date(`${value}T00:00:00.000Z`);
  const instant = isoInstant(value);
  if (!instant) throw invalidParameter('modified_since', 'query', 'format', DATE_OR_DATE_TIME_REASON);
  return instant;
}

export function serviceUseCases(deps: Omit<ServiceRouteDeps, 'contract'>): ByMode<ServiceUseCases> {
  const parts = { ...deps, sendMail: (mail: Parameters<ServiceDeps['sendMail']>[0]) => deps.jobs.sendMail(mail) };
  return { live: liveServices(parts), sandbox: sandboxServices(deps) };
}

export const registerServiceRoutes: RegisterRoutes<ServiceRouteDeps> = (router, deps) => {
  const services = serviceUseCases(deps);
  registerServiceReads(router, deps.contract, services);
  registerServiceChanges(router, deps.contract, services);
};

/**
 * A list page the read cache serves many times is written as JSON once (see `serialized`), with
 * its freshness, so a conditional read of it can be answered before validation (src/http/conditional.ts).
 */
function listReplies(): (page: Page<ServiceData>, useCases: ServiceUseCases) => SerializedReply<'listServices'> {
  const pageBytes = new WeakMap<Page<ServiceData>, SerializedReply<'listServices'>>();
  return (page, useCases) => {
    let bytes = pageBytes.get(page);
    if (!bytes) {
      bytes = serialized<'listServices'>({ status: 200, data: page.data, pagination: page.pagination }, useCases.pageFreshness(page));
      pageBytes.set(page, bytes);
    }
    return bytes;
  };
}

/** Create, list and detail. */
function registerServiceReads(router: Router, contract: Contract, services: ByMode<ServiceUseCases>): void {
  const listReply = listReplies();

  // POST /api/v1/service-create
  operation(router, contract, 'createService', {
    useCases: services,
    async validate({ body }, { useCases }) {
      await useCases.checkNewService(body.plan);
      return {
        plan: body.plan,
        hostname: body.hostname,
        customerEmail: body.customer_email,
        customerName: textParam(body.customer_name, 'customer_name', 'body') ?? null,
        billingCycle: (body.billing_cycle ?? 'monthly') as BillingCycle,
      };
    },
    async handle(input, { caller, useCases }) {
      const outcome = await useCases.createService(caller, input);
      return 'created' in outcome ? { status: 200, data: outcome.created } : { status: 202, data: outcome.requested };
    },
  });

  // GET /api/v1/services
  operation(router, contract, 'listServices', {
    useCases: services,
    validate({ query }) {
      const since = textParam(query.modified_since, 'modified_since', 'query');
      // Fields named one by one: a spread followed by more fields is V8's slow object clone (bench/README.md).
      const { limit, offset, startingAfter, endingBefore } = pageParams(query, (cursor) => intParam(cursor, NaN));
      return {
        limit,
        offset,
        startingAfter,
        endingBefore,
        status: textParam(query.status, 'status', 'query') as ServiceStatus | undefined,
        search: textParam(query.search, 'search', 'query'),
        modifiedSince: since === undefined ? undefined : parseInstant(since),
        includeCredentials: boolParam(query.include_credentials),
      };
    },
    async handle(query, { caller, useCases }) {
      return listReply(await useCases.listServices(caller, query), useCases);
    },
  });

  // GET /api/v1/services/{service_number}
  operation(router, contract, 'getService', {
    useCases: services,
    validate: ({ params }) => serviceNumberParam(params),
    async handle(serviceNumber, { caller, useCases }) {
      return { status: 200, data: await useCases.getService(caller, serviceNumber) };
    },
  });

}

/** Password, upgrade, downgrade and cancel. */
function registerServiceChanges(router: Router, contract: Contract, services: ByMode<ServiceUseCases>): void {
  // POST /api/v1/services/{service_number}/password
  operation(router, contract, 'updateServicePassword', {
    useCases: services,
    validate: ({ params, body }) => ({
      serviceNumber: serviceNumberParam(params),
      chosen: textParam(body?.password, 'password', 'body'),
    }),
    async handle({ serviceNumber, chosen }, { caller, useCases }) {
      return { status: 200, data: await useCases.changePassword(caller, serviceNumber, chosen) };
    },
  });

  // POST /api/v1/services/{service_number}/upgrade and /downgrade
  for (const change of ['upgrade', 'downgrade'] as const) {
    operation(router, contract, change === 'upgrade' ? 'upgradeService' : 'downgradeService', {
      useCases: services,
      async validate({ body, params }, { useCases }) {
        const serviceNumber = serviceNumberParam(params);
        await useCases.checkPlanChange(change, body.plan);
        return { serviceNumber, plan: body.plan };
      },
      async handle({ serviceNumber, plan }, { caller, useCases }) {
        const request = await useCases.requestPlanChange(caller, serviceNumber, change, plan);
        return { status: 202, data: request };
      },
    });
  }

  // POST /api/v1/services/{service_number}/cancel
  operation(router, contract, 'cancelService', {
    useCases: services,
    validate: ({ params, body }) => {
      const serviceNumber = serviceNumberParam(params);
      // The schema refuses an empty or white-space reason; one made only of invisible characters is as blank.
      const reason = (textParam(body.reason, 'reason', 'body') ?? '').trim();
      if (isBlank(reason)) throw missingParameter(['reason']);
      return { serviceNumber, reason, when: body.when ?? 'end_of_billing_period' };
    },
    async handle({ serviceNumber, reason, when }, { caller, useCases }) {
      const request = await useCases.requestCancellation(caller, serviceNumber, reason, when);
      return { status: 202, data: request };
    },
  });
}
