/** Reference data, not a broker's record, so sandbox keys may read it too. */
import type { Plan } from '../../generated/prisma/client.ts';
import { InvalidValueError } from '../shared/errors.ts';
import type { ReadClient } from '../shared/db-errors.ts';

export interface Catalogue {
  /** Lowest tier first. */
  plans: Plan[];
  byName(name: string): Plan | undefined;
  byId(id: number): Plan | undefined;
}

/** Reads the catalogue; an app holds it once (`AppDeps.catalogue`), so it is read once per app. */
export async function loadCatalogue(prisma: ReadClient): Promise<Catalogue> {
  const plans = await prisma.plan.findMany({ orderBy: { tier: 'asc' } });
  return {
    plans,
    byName: (name: string) => plans.find((p) => p.name.toLowerCase() === name.trim().toLowerCase()),
    byId: (id: number) => plans.find((p) => p.id === id),
  };
}

/** The catalogue plan named `name` (exact name), or `400 invalid_parameter` naming the choices. */
export function requirePlan(catalogue: Catalogue, name: string, field = 'plan'): Plan {
  const plan = catalogue.byName(name);
  if (plan) return plan;
  const allowed = catalogue.plans.map((p) => p.name);
  throw new InvalidValueError(
    field,
    'body',
    'catalogue',
    `must be one of: ${allowed.join(', ')}`,
    { allowed },
    `Invalid parameter ${field}: "${name}" is not a plan of the catalogue (${allowed.join(', ')})`,
  );
}

/** An upgrade must name a higher tier than `current`, a downgrade a lower one. */
export function requireTierChange(
  catalogue: Catalogue,
  current: Plan,
  requestedName: string,
  direction: 'upgrade' | 'downgrade',
): Plan {
  const requested = requirePlan(catalogue, requestedName);
  const ok = direction === 'upgrade' ? requested.tier > current.tier : requested.tier < current.tier;
  if (ok) return requested;
  const allowed = catalogue.plans
    .filter((p) => (direction === 'upgrade' ? p.tier > current.tier : p.tier < current.tier))
    .map((p) => p.name);
  const relation = direction === 'upgrade' ? 'higher' : 'lower';
  throw new InvalidValueError(
    'plan',
    'body',
    'tier',
    `must be a plan of a ${relation} tier than ${current.name}`,
    { current_plan: current.name, allowed },
    `Invalid parameter plan: an ${direction} needs a plan of a ${relation} tier than the current plan ${current.name}`,
  );
}
