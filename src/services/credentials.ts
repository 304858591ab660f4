/**
 * The service-password cipher of one app: the key from CREDENTIALS_KEY or $DATA_DIR/credentials.key
 * (src/db/credentials.ts), opened once per configuration on first use.
 */
import { openCredentials, type Credentials } from '../db/credentials.ts';
import type { AppDeps } from '../deps.ts';

const opened = new WeakMap<object, Promise<Credentials>>();

export function credentialsFor(deps: Pick<AppDeps, 'config'>): Promise<Credentials> {
  let credentials = opened.get(deps.config);
  if (!credentials) {
    credentials = openCredentials({ envKey: deps.config.credentialsKey, dataDir: deps.config.dataDir });
    credentials.catch(() => opened.delete(deps.config));
    opened.set(deps.config, credentials);
  }
  return credentials;
}
