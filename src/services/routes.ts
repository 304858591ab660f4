/**
 * The service operations: create, list, detail, password, upgrade, downgrade, cancel. Each one
 * serves live keys from the broker's records and sandbox keys from generated data that is never
 * stored (and never reads a business record). Scopes, the order of checks and the schema
 * validation come from openapi.yaml through `operation()`; the sandbox test scenarios
 * `validation_error`/`server_error` are applied by it after `validate`.
 */
import { isBlank } from '../shared/text.ts';
import { hasScope, isSandbox } from '../http/auth-context.ts';
import { ApiError, conflict } from '../http/errors.ts';
import { operation, serialized, type DataOf } from '../http/operation.ts';
import { formatRequestId } from '../shared/ids.ts';
import { requestData, REQUEST_INCLUDE } from '../requests/present.ts';
import type { RegisterRoutes } from '../routes.ts';
import { generatePassword } from './generate.ts';
import { randomSandboxRequestNumber, randomServiceNumber } from '../shared/ids.ts';
import { credentialsFor } from './credentials.ts';
import { loadCatalogue, requirePlan, requireTierChange } from './plans.ts';
import { serviceData, type ServiceCredentials } from './present.ts';
import { registerServicesReport } from './report.ts';
import { clampInstant } from '../shared/dates.ts';
import { boolParam, pageParams, parseInstant, serviceNumberParam, textParam } from './query.ts';
import {
  sandboxed,
  sandboxPage,
  sandboxService,
  serviceMatches,
  SANDBOX_CREDENTIALS,
  SANDBOX_DOWNGRADE_FROM,
  SANDBOX_SERVICE_NUMBER,
  SANDBOX_UPGRADE_FROM,
} from './sandbox.ts';
import {
  applyDueCancellations,
  createChangeRequest,
  findService,
  insertActiveService,
  listServices,
  requireNoOpenRequest,
  requireStatus,
  withServiceNumberRetry,
  type BillingCycle,
  type ServiceStatus,
} from './store.ts';

type RequestReply = DataOf<'upgradeService', 202>;

/** A generated (sandbox) request, shaped like a live one; `REQ-` plus six random digits. */
function sandboxRequest(fields: Partial<RequestReply> & Pick<RequestReply, 'request_type'>, now: Date): RequestReply {
  return sandboxed({
    request_id: formatRequestId(randomSandboxRequestNumber()),
    request_status: 'pending',
    source: 'api',
    service_number: null,
    current_plan: null,
    requested_plan: null,
    hostname: null,
    customer_email: null,
    reason: null,
    cancel_when: null,
    denial_reason: null,
    created_at: now.toISOString(),
    updated_at: now.toISOString(),
    decided_at: null,
    ...fields,
  }) as RequestReply;
}

export const registerServiceRoutes: RegisterRoutes = (router, deps) => {
  const { prisma, contract } = deps;
  const credentials = () => credentialsFor(deps);
  const decrypt = async (username: string, passwordEnc: string): Promise<ServiceCredentials> => ({
    username,
    password: (await credentials()).decrypt(passwordEnc),
  });

  // POST /api/v1/service-create
  operation(router, contract, 'createService', {
    async validate({ body }) {
      const plan = requirePlan(await loadCatalogue(prisma), body.plan);
      return {
        plan,
        hostname: body.hostname,
        customerEmail: body.customer_email,
        customerName: textParam(body.customer_name, 'customer_name', 'body') ?? null,
        billingCycle: (body.billing_cycle ?? 'monthly') as BillingCycle,
      };
    },
    async handle({ auth, scenario }, input) {
      const now = new Date();
      if (isSandbox(auth)) {
        // Reads only the broker's approval mode (configuration); nothing is stored.
        if (scenario === 'provider_review' || auth.brokerApproval === 'manual') {
          const request = sandboxRequest(
            {
              request_type: 'create',
              request_status: scenario === 'provider_review' ? 'provider_review' : 'pending',
              requested_plan: input.plan.name,
              hostname: input.hostname,
              customer_email: input.customerEmail,
            },
            now,
          );
          return { status: 202, data: { ...request, request_type: 'create' as const, service_number: null } };
        }
        const service = sandboxService(randomServiceNumber(), now);
        return {
          status: 200,
          data: sandboxed({
            ...service,
            plan: input.plan.name,
            hostname: input.hostname,
            customer_email: input.customerEmail,
            customer_name: input.customerName,
            billing_cycle: input.billingCycle,
          }),
        };
      }
      const fields = {
        brokerId: auth.brokerId,
        hostname: input.hostname,
        customerEmail: input.customerEmail,
        customerName: input.customerName,
        billingCycle: input.billingCycle,
      };
      if (auth.brokerApproval === 'manual') {
        const request = await prisma.serviceRequest.create({
          data: { ...fields, type: 'create', status: 'pending', source: 'api', requestedPlanId: input.plan.id, apiKeyId: auth.keyId },
          include: REQUEST_INCLUDE,
        });
        // A pending create request has no service yet: the contract's 202 says so in its type.
        return { status: 202, data: { ...requestData(request), request_type: 'create' as const, service_number: null } };
      }
      // Automatic approval: the service and its (already approved) create request, together.
      const creds = await credentials();
      const service = await withServiceNumberRetry(() =>
        prisma.$transaction(async (tx) => {
          const created = await insertActiveService(tx, creds, { ...fields, planId: input.plan.id }, now);
          await tx.serviceRequest.create({
            data: {
              ...fields,
              type: 'create',
              status: 'approved',
              source: 'api',
              serviceId: created.id,
              requestedPlanId: input.plan.id,
              apiKeyId: auth.keyId,
              createdAt: now,
              updatedAt: now,
              decidedAt: now,
            },
          });
          return created;
        }),
      );
      await deps.serviceReads.changed(auth.brokerId);
      return { status: 200, data: serviceData(service) };
    },
  });

  // GET /api/v1/services
  operation(router, contract, 'listServices', {
    validate({ query }) {
      const since = textParam(query.modified_since, 'modified_since', 'query');
      return {
        ...pageParams(query),
        status: textParam(query.status, 'status', 'query') as ServiceStatus | undefined,
        search: textParam(query.search, 'search', 'query'),
        modifiedSince: since === undefined ? undefined : parseInstant(since),
        includeCredentials: boolParam(query.include_credentials),
      };
    },
    async handle({ auth }, input) {
      const { limit, offset, includeCredentials } = input;
      const filters = { status: input.status, search: input.search, modifiedSince: input.modifiedSince };
      // Credentials only on request and only for admin keys; otherwise silently left out.
      const withCredentials = includeCredentials && hasScope(auth, 'admin:full');
      if (isSandbox(auth)) {
        const row = sandboxService(SANDBOX_SERVICE_NUMBER, new Date(), withCredentials ? SANDBOX_CREDENTIALS : undefined);
        const page = sandboxPage(sandboxed(row), serviceMatches(row, filters), limit, offset);
        return { status: 200, data: page.data, pagination: page.pagination };
      }
      // Due scheduled cancellations are applied by the list statement itself (one round trip).
      // A bound outside the storable years (0000-01-01) is clamped: it still means "since always".
      const modifiedSince = filters.modifiedSince && clampInstant(filters.modifiedSince);
      const query = { ...filters, modifiedSince, limit, offset };
      const page = async (credentials: boolean) => {
        const { rows, total, nextDueAt } = await listServices(prisma, auth.brokerId, query);
        const data = await Promise.all(
          rows.map(async (s) => serviceData(s, credentials ? await decrypt(s.username, s.passwordEnc) : undefined)),
        );
        const pagination = { total, limit, offset, has_more: offset + data.length < total };
        return { reply: { status: 200 as const, data, pagination }, nextDueAt };
      };
      // Pages without credentials are shared by the broker's keys, as JSON; passwords are never cached.
      if (withCredentials) return (await page(true)).reply;
      // JSON.stringify: the text filters are free text, so no separator could be told from them.
      const key = `list ${JSON.stringify([query.status, query.search, query.modifiedSince, limit, offset])}`;
      return deps.serviceReads.read(auth.brokerId, key, async () => {
        const { reply, nextDueAt } = await page(false);
        return { value: serialized<'listServices'>(reply), until: nextDueAt };
      });
    },
  });

  // GET /api/v1/services/{service_number}
  operation(router, contract, 'getService', {
    validate: ({ params }) => serviceNumberParam(params),
    async handle({ auth }, number) {
      if (isSandbox(auth)) {
        // Echoes the number without looking anything up.
        const service = sandboxed(sandboxService(number, new Date(), SANDBOX_CREDENTIALS));
        return { status: 200, data: { ...service, credentials: SANDBOX_CREDENTIALS } };
      }
      await applyDueCancellations(prisma, auth.brokerId);
      const service = await findService(prisma, auth.brokerId, number);
      const serviceCredentials = await decrypt(service.username, service.passwordEnc);
      return { status: 200, data: { ...serviceData(service, serviceCredentials), credentials: serviceCredentials } };
    },
  });

  // POST /api/v1/services/{service_number}/password
  operation(router, contract, 'updateServicePassword', {
    validate: ({ params, body }) => ({
      number: serviceNumberParam(params),
      chosen: textParam(body?.password, 'password', 'body'),
    }),
    async handle({ auth, requestId }, { number, chosen }) {
      const password = chosen ?? generatePassword();
      const generated = chosen === undefined;
      const now = new Date();
      if (isSandbox(auth)) {
        const data: DataOf<'updateServicePassword', 200> = sandboxed({
          service_number: number,
          password_generated: generated,
          customer_notified: false,
          updated_at: now.toISOString(),
        });
        if (generated) data.password = password;
        return { status: 200, data };
      }
      await applyDueCancellations(prisma, auth.brokerId, now);
      const service = await findService(prisma, auth.brokerId, number);
      requireStatus(service, ['pending', 'active', 'suspended'], 'given a new password');
      const updated = await prisma.service.update({
        where: { id: service.id },
        data: { passwordEnc: (await credentials()).encrypt(password), updatedAt: now },
      });
      await deps.serviceReads.changed(auth.brokerId);
      let notified = false;
      try {
        await deps.jobs.sendMail({
          to: service.customerEmail,
          subject: `New password for your server ${service.hostname}`,
          text: passwordMail(service.customerName, service.hostname, service.serviceNumber, service.username, password),
        });
        notified = true;
      } catch (err) {
        // The password is changed either way; the answer says the customer was not told.
        deps.logger.warn({ err, requestId, serviceNumber: service.serviceNumber }, 'password notice not queued');
      }
      const data: DataOf<'updateServicePassword', 200> = {
        service_number: service.serviceNumber,
        password_generated: generated,
        customer_notified: notified,
        updated_at: updated.updatedAt.toISOString(),
      };
      if (generated) data.password = password;
      return { status: 200, data };
    },
  });

  // POST /api/v1/services/{service_number}/upgrade and /downgrade
  for (const direction of ['upgrade', 'downgrade'] as const) {
    const operationId = direction === 'upgrade' ? 'upgradeService' : 'downgradeService';
    operation(router, contract, operationId, {
      async validate({ auth, body, params }) {
        const number = serviceNumberParam(params);
        const catalogue = await loadCatalogue(prisma);
        const requested = requirePlan(catalogue, body.plan);
        if (isSandbox(auth)) {
          // The simulated current plan is fixed, so the tier rule is input validation here.
          const current = requirePlan(catalogue, direction === 'upgrade' ? SANDBOX_UPGRADE_FROM : SANDBOX_DOWNGRADE_FROM);
          requireTierChange(catalogue, current, requested.name, direction);
          return { number, catalogue, requested, current };
        }
        return { number, catalogue, requested, current: undefined };
      },
      async handle({ auth, scenario }, input) {
        const number = input.number;
        const now = new Date();
        if (isSandbox(auth)) {
          return {
            status: 202,
            data: sandboxRequest(
              {
                request_type: direction,
                request_status: scenario === 'provider_review' ? 'provider_review' : 'pending',
                service_number: number,
                current_plan: input.current!.name,
                requested_plan: input.requested.name,
                hostname: 'test-server.example.com',
                customer_email: 'test.customer@example.com',
              },
              now,
            ),
          };
        }
        await applyDueCancellations(prisma, auth.brokerId, now);
        const service = await findService(prisma, auth.brokerId, number);
        requireStatus(service, ['active'], direction === 'upgrade' ? 'upgraded' : 'downgraded');
        await requireNoOpenRequest(prisma, service);
        const requested = requireTierChange(input.catalogue, service.plan, input.requested.name, direction);
        const request = await createChangeRequest(prisma, service, {
          type: direction,
          requestedPlanId: requested.id,
          apiKeyId: auth.keyId,
        });
        return { status: 202, data: requestData(request) };
      },
    });
  }

  // POST /api/v1/services/{service_number}/cancel
  operation(router, contract, 'cancelService', {
    validate: ({ params, body }) => {
      const number = serviceNumberParam(params);
      // The schema refuses an empty or white-space reason; one made only of invisible characters is as blank.
      const reason = (textParam(body.reason, 'reason', 'body') ?? '').trim();
      if (isBlank(reason)) throw new ApiError('missing_parameter', 'Missing required parameter: reason', { required: ['reason'], missing: ['reason'] });
      return { number, reason, when: body.when ?? 'end_of_billing_period' };
    },
    async handle({ auth, scenario }, { number, reason, when }) {
      const now = new Date();
      if (isSandbox(auth)) {
        return {
          status: 202,
          data: sandboxRequest(
            {
              request_type: 'cancel',
              request_status: scenario === 'provider_review' ? 'provider_review' : 'pending',
              service_number: number,
              current_plan: 'Standard VPS',
              hostname: 'test-server.example.com',
              customer_email: 'test.customer@example.com',
              reason,
              cancel_when: when,
            },
            now,
          ),
        };
      }
      await applyDueCancellations(prisma, auth.brokerId, now);
      const service = await findService(prisma, auth.brokerId, number);
      if (service.status === 'cancelled') throw conflict(`Service ${number} is already cancelled`, 'cancelled');
      const request = await createChangeRequest(prisma, service, {
        type: 'cancel',
        reason,
        cancelWhen: when,
        apiKeyId: auth.keyId,
      });
      return { status: 202, data: requestData(request) };
    },
  });

  // POST /api/v1/reports/services
  registerServicesReport(router, deps);
};

function passwordMail(name: string | null, hostname: string, serviceNumber: number, username: string, password: string): string {
  return [
    `Hello${name ? ` ${name}` : ''},`,
    '',
    `the password of your server ${hostname} (service ${serviceNumber}) has been changed.`,
    '',
    `Login:    ${username}`,
    `Password: ${password}`,
    '',
    'Please keep it safe. If you did not expect this change, contact your provider.',
  ].join('\n');
}
