/** Sandbox keys see the sandbox list's one row. */
import type { ByMode, Caller } from '../shared/caller.ts';
import type { ReadClient } from '../shared/db-errors.ts';

export interface AuthCheckUseCases {
  serviceCount(caller: Caller): Promise<number>;
}

/** The per-broker read cache of service answers (AppDeps.serviceReads), as far as a count needs it. */
interface ServiceAnswers {
  read<T>(brokerId: string, key: string, load: () => Promise<{ value: T }>): Promise<T>;
}

export function authCheckUseCases(deps: { prisma: ReadClient; serviceReads: ServiceAnswers }): ByMode<AuthCheckUseCases> {
  return {
    live: {
      // A count over all of the broker's rows on every auth-check cost most of its throughput
      // (bench/README.md); it is held like a list page and dropped on every change.
      serviceCount: (caller) =>
        deps.serviceReads.read(caller.brokerId, 'count', async () => ({
          value: await deps.prisma.service.count({ where: { brokerId: caller.brokerId } }),
        })),
    },
    sandbox: { serviceCount: async () => 1 },
  };
}
