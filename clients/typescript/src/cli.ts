#!/usr/bin/env node
/// <reference types="node" />
/**
 * The package's command, `client-api-v1` (its `bin`): `npx client-api-v1 listen --forward-to
 * http://localhost:4000/hooks [--events service.*]`, with CAPI_URL and CAPI_KEY (or --url, --api-key).
 */
import { parseArgs } from 'node:util';
import { checkOptions, listen, ListenError, newSessionSecret, printable } from './listen.ts';

const USAGE = `Usage: client-api-v1 listen --forward-to <url> [options]

Walks the key's event feed from now on and POSTs each new event to <url>, signed as a webhook
delivery (Standard Webhooks) with a secret of this session, printed first.

Options:
  --forward-to <url>    the local receiver, e.g. http://localhost:4000/hooks (required;
                        localhost, 127.0.0.1 or [::1] unless --allow-remote-forward)
  --events <patterns>   only these event types, * matching anything: service.*,request.created
                        (repeat it or separate with commas; default: every type)
  --url <url>           the API's base URL (default: $CAPI_URL)
  --api-key <key>       an admin:full key (default: $CAPI_KEY; never printed)
  --secret <whsec_…>    sign with this secret instead of a new one (keeps your receiver's setting)
  --interval <ms>       the wait between polls when nothing is new (default 1000)
  --allow-remote-forward  let --forward-to name another machine (the events leave this one)
  --allow-insecure-api  let the API URL be http: to another machine (the key travels in clear)
  -h, --help            this text`;

/** Exit codes: 0 stopped by a signal, 1 a refusal (key, URL, a feed that does not advance), 2 a wrong command line. */
function usageError(message: string): never {
  process.stderr.write(`client-api-v1: ${message}\n\n${USAGE}\n`);
  process.exit(2);
}

function options() {
  try {
    return parseArgs({
      allowPositionals: true,
      options: {
        'forward-to': { type: 'string' },
        events: { type: 'string', multiple: true },
        url: { type: 'string' },
        'api-key': { type: 'string' },
        secret: { type: 'string' },
        interval: { type: 'string' },
        'allow-remote-forward': { type: 'boolean' },
        'allow-insecure-api': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    return usageError((error as Error).message);
  }
}

async function main(): Promise<void> {
  const { values, positionals } = options();
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (positionals[0] !== 'listen' || positionals.length > 1) usageError(positionals.length === 0 ? 'no command given' : `unknown command ${positionals.join(' ')}`);
  const baseUrl = values.url ?? process.env.CAPI_URL;
  const apiKey = values['api-key'] ?? process.env.CAPI_KEY;
  if (!values['forward-to']) usageError('--forward-to is required');
  if (!baseUrl) usageError('no API URL: set CAPI_URL or --url');
  if (!apiKey) usageError('no key: set CAPI_KEY or --api-key');
  const intervalMs = values.interval === undefined ? 1000 : Number(values.interval);
  if (!Number.isInteger(intervalMs) || intervalMs < 100) usageError('--interval must be a whole number of milliseconds, at least 100');

  const secret = values.secret ?? newSessionSecret();
  const events = (values.events ?? []).flatMap((value) => value.split(',')).map((p) => p.trim()).filter((p) => p !== '');
  const stop = new AbortController();
  // The first signal stops after the event being forwarded; a second one exits at once.
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop.signal.aborted) process.exit(130);
    process.stderr.write(`${signal}: stopping\n`);
    stop.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const forwardTo = values['forward-to'];
  const allowed = { allowRemoteForward: values['allow-remote-forward'] === true, allowInsecureApi: values['allow-insecure-api'] === true };
  try {
    checkOptions({ baseUrl, forwardTo, events, secret, ...allowed });
    process.stdout.write(`Webhook signing secret of this session: ${secret}\n`);
    const summary = await listen({
      baseUrl, apiKey, forwardTo, events, secret, ...allowed, pollIntervalMs: intervalMs, signal: stop.signal,
      print: (line) => process.stdout.write(`${line}\n`),
      note: (line) => process.stderr.write(`${line}\n`),
    });
    process.stderr.write(`Stopped: ${summary.forwarded} event(s) forwarded${summary.lastEventId ? `, the feed read up to ${printable(summary.lastEventId)}` : ''}.\n`);
  } catch (error) {
    if (!(error instanceof ListenError)) throw error;
    process.stderr.write(`client-api-v1 listen: ${error.message}\n`);
    process.exitCode = 1;
  }
}

await main();
