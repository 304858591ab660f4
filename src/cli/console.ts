/** `console`: a console link for a broker, made with one of its `admin:full` keys (openapi.yaml, "Console"). */
import type { Config } from '../config.ts';
import { consoleLinkUrl, createConsoleLink } from '../console/index.ts';
import { findBrokerBySlug } from './brokers.ts';
import { CliError } from './errors.ts';
import type { ReadClient } from '../shared/db-errors.ts';

export interface ConsoleLinkRequest {
  brokerSlug: string;
  mode: 'live' | 'test';
  /** The key the console acts with; default the broker's newest valid `admin:full` key of the mode. */
  keyId: string | undefined;
}

export interface PrintedConsoleLink {
  url: string;
  expires_at: string;
  key_id: string;
  mode: 'live' | 'test';
}

export async function consoleLink(prisma: ReadClient, config: Pick<Config, 'publicBaseUrl'>, input: ConsoleLinkRequest): Promise<PrintedConsoleLink> {
  const broker = await findBrokerBySlug(prisma, input.brokerSlug);
  const now = new Date();
  const key = await prisma.apiKey.findFirst({
    where: {
      brokerId: broker.id,
      mode: input.mode,
      ...(input.keyId !== undefined && { id: input.keyId }),
      active: true,
      revokedAt: null,
      OR: [{ expiresAt: null }, { expiresAt: { gt: now } }],
      scopes: { has: 'admin:full' },
    },
    orderBy: { createdAt: 'desc' },
    select: { id: true, mode: true },
  });
  if (!key) {
    throw new CliError(
      input.keyId !== undefined
        ? `key "${input.keyId}" is not a valid ${input.mode} admin:full key of broker "${input.brokerSlug}" (see \`keys list\`)`
        : `broker "${input.brokerSlug}" has no valid ${input.mode} key with admin:full: create one with \`keys create --broker ${input.brokerSlug} --mode ${input.mode} --scopes admin:full\``,
    );
  }
  const link = await createConsoleLink(prisma, key.id, now);
  return { url: consoleLinkUrl(config, link.token), expires_at: link.expiresAt.toISOString(), key_id: key.id, mode: key.mode };
}
