/** With --json, stdout holds exactly one JSON object, so scripts can parse it; everything else goes to stderr. */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { pathToFileURL } from 'node:url';
import { loadConfig } from '../config.ts';
import { protectDataDir } from '../shared/data-dir.ts';
import { connectForCli, type Database } from '../db/client.ts';
import { databaseLine } from './where.ts';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { checkCredentialsKey, createCredentials, KEY_FILE_NAME, loadCredentialsKey, type Credentials } from '../db/credentials.ts';
import { CliError, oneLine } from './errors.ts';
import { createBroker, type BrokerSummary } from './brokers.ts';
import { createKey, listKeys, parseExpiresAt, parseIpWhitelist, parseRateLimit, parseScopes, revokeKey, splitList, type CreatedKey, type KeyListItem } from './keys.ts';
import { readImportFile } from './import-file.ts';
import { importInvoices, importServices, validateInvoiceRows } from './imports.ts';
import { runDemo } from './demo.ts';
import { consoleLink, type PrintedConsoleLink } from './console.ts';

export const USAGE = `Usage: npm run --silent cli -- <command> [options] [--json]

Commands:
  brokers create --name N --email E [--slug S] [--approval automatic|manual]
  keys create --broker SLUG --mode live|test --scopes a,b,... [--name N]
              [--ip-whitelist ip,cidr,...] [--restrict-ip] [--rate-limit N] [--expires-at ISO8601]
  keys list --broker SLUG
  keys revoke ID
  invoices import --broker SLUG --file PATH    (JSON array or CSV with a header row)
  services import --broker SLUG --file PATH    (JSON array or CSV with a header row)
  console --broker SLUG [--mode live|test] [--key ID]
              (a single-use console link, valid 10 minutes; default: the newest admin:full live key)
  demo

--json prints exactly one JSON object on stdout. Errors: one line on stderr, exit status 1.
Database: DATABASE_URL if set, else the embedded database under $DATA_DIR (default ./var),
through the running server when there is one.`;

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

/**
 * On PostgreSQL the server may run elsewhere with another key, and passwords written with a key it
 * does not have cannot be read back: say so when a fresh key was generated.
 */
async function serverCredentials(io: Io, prisma: Database['prisma']): Promise<Credentials> {
  const config = loadConfig();
  const file = path.join(config.dataDir, KEY_FILE_NAME);
  const fresh = config.credentialsKey === undefined && config.databaseUrl !== undefined && !existsSync(file);
  const source = { envKey: config.credentialsKey, dataDir: config.dataDir };
  const key = await loadCredentialsKey(source);
  // Refused like a server with another key: what it wrote could not be read by the others.
  await checkCredentialsKey(prisma, key, source);
  if (fresh) {
    io.err(`note: generated a new credentials key in ${file}; the API server must use the same key (same DATA_DIR, or set CREDENTIALS_KEY for both)`);
  }
  return createCredentials(key);
}

type Options = NonNullable<ParseArgsConfig['options']>;
type Values = Record<string, string | boolean | undefined>;

interface Context {
  values: Values;
  positionals: string[];
  json: boolean;
  io: Io;
  db(): Promise<Database>;
}

interface Command {
  options: Options;
  positionals?: number;
  run(ctx: Context): Promise<unknown>;
  /** The human-readable form (without --json). */
  human(result: unknown): string;
}

const str = (v: Values, name: string): string | undefined => {
  const value = v[name];
  return typeof value === 'string' ? value : undefined;
};
const need = (v: Values, name: string): string => {
  const value = str(v, name);
  if (value === undefined || value.trim() === '') throw new CliError(`--${name} is required`);
  return value;
};

const COMMANDS: Record<string, Command> = {
  'brokers create': {
    options: { name: { type: 'string' }, email: { type: 'string' }, slug: { type: 'string' }, approval: { type: 'string' } },
    async run({ values, db }) {
      const name = need(values, 'name');
      const email = need(values, 'email');
      const approval = str(values, 'approval');
      if (approval !== undefined && approval !== 'automatic' && approval !== 'manual') {
        throw new CliError(`--approval must be automatic or manual, got ${JSON.stringify(approval)}`);
      }
      return createBroker((await db()).prisma, { name, email, slug: str(values, 'slug'), approval });
    },
    human: (r) => {
      const b = r as BrokerSummary;
      return `Created broker "${b.name}": slug ${b.slug}, id ${b.id}, ${b.approval} approval`;
    },
  },

  'keys create': {
    options: {
      broker: { type: 'string' },
      mode: { type: 'string' },
      scopes: { type: 'string' },
      name: { type: 'string' },
      'ip-whitelist': { type: 'string' },
      'restrict-ip': { type: 'boolean' },
      'rate-limit': { type: 'string' },
      'expires-at': { type: 'string' },
    },
    async run({ values, db }) {
      const brokerSlug = need(values, 'broker');
      const mode = need(values, 'mode');
      if (mode !== 'live' && mode !== 'test') throw new CliError(`--mode must be live or test, got ${JSON.stringify(mode)}`);
      const scopes = parseScopes(splitList(need(values, 'scopes')));
      const whitelistText = str(values, 'ip-whitelist');
      const ipWhitelist = whitelistText === undefined ? [] : parseIpWhitelist(splitList(whitelistText));
      if (whitelistText !== undefined && ipWhitelist.length === 0) {
        throw new CliError('--ip-whitelist needs at least one address or CIDR block (use --restrict-ip alone for an empty whitelist)');
      }
      const rateText = str(values, 'rate-limit');
      const expiresText = str(values, 'expires-at');
      return createKey((await db()).prisma, {
        brokerSlug,
        mode,
        scopes,
        name: str(values, 'name'),
        ipWhitelist,
        restrictIp: values['restrict-ip'] === true,
        rateLimit: rateText === undefined ? undefined : parseRateLimit(rateText),
        expiresAt: expiresText === undefined ? undefined : parseExpiresAt(expiresText),
      });
    },
    human: (r) => {
      const k = r as CreatedKey;
      return [
        `Created ${k.mode} key ${k.id} (scopes: ${k.scopes.join(', ')})`,
        '',
        `  ${k.key}`,
        '',
        'This is the only time the key is shown: store it now (only its hash is kept).',
      ].join('\n');
    },
  },

  'keys list': {
    options: { broker: { type: 'string' } },
    async run({ values, db }) {
      const slug = need(values, 'broker');
      return listKeys((await db()).prisma, slug);
    },
    human: (r) => {
      const { keys } = r as { keys: KeyListItem[] };
      if (keys.length === 0) return 'No keys.';
      return keys
        .map((k) => {
          const state = !k.active ? 'revoked' : k.expires_at && Date.parse(k.expires_at) <= Date.now() ? 'expired' : 'active';
          const ip = k.ip_restricted ? `ip: ${k.ip_whitelist.length ? k.ip_whitelist.join(',') : '(none allowed)'}` : 'ip: any';
          return [
            `${k.id}  ${k.prefix}...${k.last4}  ${k.mode}  ${state}  "${k.name}"`,
            `    scopes: ${k.scopes.join(',')}  ${ip}  rate: ${k.rate_limit}/min` +
              `  expires: ${k.expires_at ?? 'never'}  last used: ${k.last_used_at ?? 'never'}`,
          ].join('\n');
        })
        .join('\n');
    },
  },

  'keys revoke': {
    options: {},
    positionals: 1,
    async run({ positionals, db }) {
      const id = positionals[0];
      if (id === undefined) throw new CliError('usage: keys revoke ID');
      return revokeKey((await db()).prisma, id);
    },
    human: (r) => `Revoked key ${(r as { id: string }).id}`,
  },

  'invoices import': {
    options: { broker: { type: 'string' }, file: { type: 'string' } },
    async run({ values, db }) {
      const slug = need(values, 'broker');
      const rows = await readImportFile(need(values, 'file'));
      validateInvoiceRows(rows); // a bad file fails before the database is opened
      return importInvoices((await db()).prisma, slug, rows);
    },
    human: (r) => `Imported ${(r as { imported: number }).imported} invoices`,
  },

  'services import': {
    options: { broker: { type: 'string' }, file: { type: 'string' } },
    async run({ values, db, io }) {
      const slug = need(values, 'broker');
      const rows = await readImportFile(need(values, 'file'));
      const prisma = (await db()).prisma;
      return importServices(prisma, slug, rows, { credentials: await serverCredentials(io, prisma) });
    },
    human: (r) => `Imported ${(r as { imported: number }).imported} services`,
  },

  console: {
    options: { broker: { type: 'string' }, mode: { type: 'string' }, key: { type: 'string' } },
    async run({ values, db }) {
      const brokerSlug = need(values, 'broker');
      const mode = str(values, 'mode') ?? 'live';
      if (mode !== 'live' && mode !== 'test') throw new CliError(`--mode must be live or test, got ${JSON.stringify(mode)}`);
      return consoleLink((await db()).prisma, loadConfig(), { brokerSlug, mode, keyId: str(values, 'key') });
    },
    human: (r) => {
      const link = r as PrintedConsoleLink;
      return [
        `Console link (${link.mode} mode, key ${link.key_id}); it works once, until ${link.expires_at}:`,
        '',
        `  ${link.url}`,
      ].join('\n');
    },
  },

  demo: {
    options: {},
    async run({ db, io, json }) {
      const prisma = (await db()).prisma;
      const { result, created, skipped } = await runDemo(prisma, { credentials: await serverCredentials(io, prisma), linkTtlHours: loadConfig().reportLinkTtlHours });
      for (const line of skipped) io.err(`note: contract example left out: ${line}`);
      if (!created) {
        io.err(`demo broker "${result.broker}" already exists: kept its data, put the contract examples' records back as openapi.yaml shows them and created a new pair of keys for it (earlier keys stay valid)`);
      } else if (!json) {
        io.err(`Created demo broker "${result.broker}" with sample services, requests and invoices, and the records openapi.yaml's examples name.`);
      }
      return result;
    },
    human: (r) => {
      const d = r as { broker: string; test_key: string; live_key: string };
      return [
        `Demo broker: ${d.broker}`,
        `Test key (sandbox, admin:full): ${d.test_key}`,
        `Live key (admin:full):          ${d.live_key}`,
        'Keys are shown only once: store them now.',
        '',
        'Try:',
        `  curl -s http://127.0.0.1:3000/api/v1/auth-check -H "Authorization: Bearer ${d.test_key}"`,
      ].join('\n');
    },
  },
};

/** Runs one CLI invocation; resolves with the exit status. */
export async function main(given: readonly string[], io: Io): Promise<number> {
  // `--json` is the one global flag: also accepted before the command (`cli --json demo`).
  let lead = 0;
  while (given[lead] === '--json') lead += 1;
  const argv = lead > 0 ? [...given.slice(lead), '--json'] : given;
  const json = argv.includes('--json');
  const words: string[] = [];
  for (const a of argv) {
    if (a.startsWith('-')) break;
    words.push(a);
  }
  if (words.length === 0 || argv.includes('--help') || argv.includes('-h') || words[0] === 'help') {
    const asked = argv.includes('--help') || argv.includes('-h') || words[0] === 'help';
    (asked ? io.out : io.err)(USAGE);
    return asked ? 0 : 1;
  }
  const name = COMMANDS[words.slice(0, 2).join(' ')] ? words.slice(0, 2).join(' ') : words[0]!;
  const command = COMMANDS[name];
  let database: Database | undefined;
  try {
    if (!command) throw new CliError(`unknown command "${words.slice(0, 2).join(' ')}" (try --help)`);
    const rest = argv.slice(name.split(' ').length);
    let parsed: { values: Values; positionals: string[] };
    try {
      parsed = parseArgs({
        args: [...rest],
        options: { ...command.options, json: { type: 'boolean' } },
        allowPositionals: true,
        strict: true,
      }) as { values: Values; positionals: string[] };
    } catch (e) {
      const code = (e as { code?: string }).code;
      const option = /'(-[^' ]+)/.exec(oneLine(e))?.[1];
      if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option) {
        throw new CliError(`unknown option ${option} for "${name}" (try --help)`);
      }
      throw new CliError(oneLine(e));
    }
    if (parsed.positionals.length > (command.positionals ?? 0)) {
      throw new CliError(`unexpected argument "${parsed.positionals[command.positionals ?? 0]}" for "${name}"`);
    }
    const result = await command.run({
      values: parsed.values,
      positionals: parsed.positionals,
      json,
      io,
      db: async () => {
        if (!database) {
          const config = loadConfig();
          await protectDataDir(config.dataDir);
          database = await connectForCli({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
          // A cluster PGlite has just unpacked here keeps its own file modes until narrowed.
          await protectDataDir(config.dataDir);
          io.err(databaseLine(database, config.dataDir));
        }
        return database;
      },
    });
    io.out(json ? JSON.stringify(result) : command.human(result));
    return 0;
  } catch (e) {
    io.err(`error: ${oneLine(e)}`);
    if (process.env.CLI_DEBUG && e instanceof Error && !(e instanceof CliError)) io.err(e.stack ?? '');
    return 1;
  } finally {
    await (database as Database | undefined)?.close().catch(() => {});
  }
}

function write(stream: NodeJS.WriteStream, text: string): Promise<void> {
  return new Promise((resolve) => stream.write(text + '\n', () => resolve()));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const pending: Promise<void>[] = [];
  const code = await main(process.argv.slice(2), {
    out: (t) => void pending.push(write(process.stdout, t)),
    err: (t) => void pending.push(write(process.stderr, t)),
  });
  await Promise.all(pending);
  // PGlite and pg pools are closed; exit now rather than wait for stray timers.
  process.exit(code);
}
