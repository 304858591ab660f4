import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Express } from 'express';
import type { Contract } from './contract.ts';
import { ROOT_DIR } from '../root.ts';

export const DOCS_FILE = path.join(ROOT_DIR, 'docs', 'index.html');

/** The published reference (Redoc) and the contract itself, outside /api and without a key. */
export function registerDocs(app: Express, contract: Contract): void {
  const json = JSON.stringify(contract.document, null, 2);
  app.get('/openapi.yaml', (_req, res) => {
    res.type('application/yaml; charset=utf-8').send(contract.yaml);
  });
  app.get('/openapi.json', (_req, res) => {
    res.type('application/json; charset=utf-8').send(json);
  });
  app.get('/docs', (_req, res, next) => {
    if (!existsSync(DOCS_FILE)) {
      next(new Error('docs/index.html is missing: run npm run docs'));
      return;
    }
    // Redoc's bundle runs inline scripts and web workers from blob: URLs.
    res.setHeader(
      'Content-Security-Policy',
      "default-src 'self'; script-src 'self' 'unsafe-inline' blob:; style-src 'self' 'unsafe-inline'; img-src 'self' data:; worker-src blob:; font-src 'self' data:",
    );
    res.sendFile(DOCS_FILE);
  });
}
