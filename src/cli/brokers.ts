import type { ApprovalMode, Broker } from '../../generated/prisma/client.ts';
import { isEmailAddress } from '../shared/email.ts';
import { CliError } from './errors.ts';
import { randomId } from '../shared/ids.ts';
import { isUniqueViolation, type Db } from '../shared/db-errors.ts';

export interface CreateBrokerInput {
  name: string;
  email: string;
  slug?: string | undefined;
  approval?: ApprovalMode | undefined;
}

export interface BrokerSummary {
  id: string;
  slug: string;
  name: string;
  approval: ApprovalMode;
}

const SLUG_RE = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const SLUG_MAX = 63;
// Deliberately simple: one @, no spaces, a dot in the domain. Mail delivery is the real test.

/** `Acme Hosting, Inc.` -> `acme-hosting-inc` (accents folded, anything else becomes a dash). */
export function slugify(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48)
    .replace(/-+$/, '');
}

export function toBrokerSummary(b: Broker): BrokerSummary {
  return { id: b.id, slug: b.slug, name: b.name, approval: b.approval };
}

/** An explicit `slug` must be free; a derived one gets `-2`, `-3`, … when taken. */
export async function createBroker(prisma: Db, input: CreateBrokerInput): Promise<BrokerSummary> {
  const name = input.name?.trim() ?? '';
  if (name === '') throw new CliError('--name must not be empty');
  if (name.length > 200) throw new CliError('--name must be at most 200 characters');
  const email = input.email?.trim() ?? '';
  if (!isEmailAddress(email)) throw new CliError(`--email must be an e-mail address, got ${JSON.stringify(input.email ?? '')}`);
  const approval = input.approval ?? 'manual';
  if (approval !== 'automatic' && approval !== 'manual') {
    throw new CliError(`--approval must be automatic or manual, got ${JSON.stringify(approval)}`);
  }

  const explicit = input.slug !== undefined;
  const base = explicit ? input.slug!.trim() : slugify(name);
  if (explicit && (!SLUG_RE.test(base) || base.length > SLUG_MAX)) {
    throw new CliError(
      `--slug must be lowercase letters, digits and single dashes (at most ${SLUG_MAX} characters), got ${JSON.stringify(input.slug)}`,
    );
  }
  if (base === '') throw new CliError(`cannot derive a slug from the name ${JSON.stringify(name)}; pass --slug`);

  for (let n = 1; n <= 100; n++) {
    const slug = n === 1 ? base : `${base}-${n}`;
    if (await prisma.broker.findUnique({ where: { slug }, select: { id: true } })) {
      if (explicit) throw new CliError(`a broker with slug "${slug}" already exists`);
      continue;
    }
    try {
      const broker = await prisma.broker.create({ data: { id: randomId('brk_'), slug, name, email, approval } });
      return toBrokerSummary(broker);
    } catch (e) {
      // Another process took the slug between the check and the insert.
      if (!isUniqueViolation(e)) throw e;
      if (explicit) throw new CliError(`a broker with slug "${slug}" already exists`);
    }
  }
  throw new CliError(`too many brokers with slugs like "${base}"; pass --slug`);
}

/** The broker with this slug, or a CliError naming the slug. */
export async function findBrokerBySlug(prisma: Db, slug: string | undefined): Promise<Broker> {
  if (slug === undefined || slug.trim() === '') throw new CliError('--broker SLUG is required');
  const broker = await prisma.broker.findUnique({ where: { slug: slug.trim() } });
  if (!broker) throw new CliError(`unknown broker "${slug.trim()}"`);
  return broker;
}
